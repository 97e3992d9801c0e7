name = 'x'
value = 2
