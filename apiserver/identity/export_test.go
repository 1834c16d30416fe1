package identity

// HashWithParamsForTest hashes with explicit parameters.
func HashWithParamsForTest(password string, p HashParams) string {
	h, err := hashWith(password, p)
	if err != nil {
		panic(err)
	}
	return h
}
