alpha = 1
beta = 2
