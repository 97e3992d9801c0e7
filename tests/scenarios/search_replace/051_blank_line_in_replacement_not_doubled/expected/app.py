import os

# Entry point.
def main():
    return os.getcwd()
