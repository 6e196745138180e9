print("parlourctl")
