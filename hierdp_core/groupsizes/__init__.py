"""Group-size release: how many groups (households) of each size in every region."""
