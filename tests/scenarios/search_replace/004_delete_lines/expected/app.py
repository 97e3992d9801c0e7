import os


def greet(name):
    message = 'Hello, ' + name
    return message


def main():
    greet('world')
