class Job:
    def handle(self, event):
        start = now()
        data = load(event)
        check(data)
        return data
