name = 'y'
value = 1
