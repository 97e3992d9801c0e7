import os

def main():
    return os.getcwd()
