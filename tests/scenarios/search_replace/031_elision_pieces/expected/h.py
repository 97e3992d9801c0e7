def handler(event, ctx):
    start = now()
    data = load(event)
    check(data)
    result = work(data)
    return result, ctx
