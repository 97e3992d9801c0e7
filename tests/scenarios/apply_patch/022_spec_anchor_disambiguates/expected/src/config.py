def load(path):
    data = json.load(open(path))
    return validate(data)


def save(path, data):
    with open(path) as fh:
        data = json.load(fh)
    return validate(data)
