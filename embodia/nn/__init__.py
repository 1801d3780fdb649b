"""Neural-network layers shared by embodia's models; depends on torch and embodia.core only."""
