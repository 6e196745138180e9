print("parlour-satellite")
