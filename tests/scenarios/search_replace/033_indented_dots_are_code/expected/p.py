class P:
    def run(self):
        return 1
