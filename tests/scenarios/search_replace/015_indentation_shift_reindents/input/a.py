class A:
    def run(self):
        if self.ok:
            go()
        stop()
