"""`python -m wardlock_wit`: prints the directory of the WIT worlds."""

from wardlock_wit import PATH

print(PATH)
