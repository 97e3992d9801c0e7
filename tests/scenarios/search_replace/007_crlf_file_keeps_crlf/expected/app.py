import os


def greet(name):
    message = 'Hello, ' + name
    print(message)
    print(len(message))
    return message


def main():
    greet('world')
