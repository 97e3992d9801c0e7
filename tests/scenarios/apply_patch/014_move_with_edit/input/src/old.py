NAME = 'old'
X = 1
