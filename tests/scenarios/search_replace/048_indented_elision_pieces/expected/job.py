class Job:
    def handle(self, event, ctx):
        start = now()
        data = load(event)
        check(data)
        return data, ctx
