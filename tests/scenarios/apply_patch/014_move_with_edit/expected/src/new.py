NAME = 'new'
X = 1
