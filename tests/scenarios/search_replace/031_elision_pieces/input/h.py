def handler(event):
    start = now()
    data = load(event)
    check(data)
    result = work(data)
    return result
