import os


def configure(settings):
    """Fill in the defaults."""
    settings.setdefault('option_1', 1)
    settings.setdefault('option_2', 2)
    settings.setdefault('option_3', 3)
    settings.setdefault('option_4', 4)
    settings.setdefault('option_5', 5)
    settings.setdefault('option_6', 6)
    settings.setdefault('option_7', 7)
    settings.setdefault('option_8', 8)
    settings.setdefault('option_9', 9)
    settings.setdefault('option_10', 10)
    settings.setdefault('option_11', 11)
    settings.setdefault('option_12', 12)
    settings.setdefault('option_13', 13)
    settings.setdefault('option_14', 14)
    return settings
