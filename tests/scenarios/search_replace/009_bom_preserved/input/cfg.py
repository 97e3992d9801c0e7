name = 'x'
value = 1
