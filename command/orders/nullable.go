package orders

// Nullable is s as a nullable SQL value: nil when s is empty.
func Nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
