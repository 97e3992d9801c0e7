def load(path):
    data = json.load(open(path))
    return validate(data)


def save(path, data):
    data = 2
    return validate(data)
