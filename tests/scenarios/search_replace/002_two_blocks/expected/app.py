import os
import sys


def greet(name):
    message = 'Hello, ' + name
    print(message)
    return message


def main():
    greet(sys.argv[1])
