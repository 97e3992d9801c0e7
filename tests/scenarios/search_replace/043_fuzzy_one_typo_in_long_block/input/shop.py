def compute_total(items, tax_rate):
    subtotal = sum(item.price * item.quantity for item in items)
    tax = subtotal * tax_rate
    return round(subtotal + tax, 2)
