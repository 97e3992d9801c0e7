class A:
    pass


class B:
    x = 1
    pass
