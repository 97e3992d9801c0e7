class A:
    def run(self):
        if self.ok:
            go()
            log('went')
        stop()
