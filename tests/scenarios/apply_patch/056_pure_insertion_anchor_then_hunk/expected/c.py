def a():
    """A."""
    return 1

def b():
    return 3
