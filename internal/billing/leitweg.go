package billing

import (
	"strings"

	"github.com/o2i-service/o2i/internal/leitweg"
)

// ValidLeitwegID reports whether id is a formally valid Leitweg-ID: format
// and ISO 7064 MOD 97-10 check digits (package leitweg), letters compared
// upper-cased. The XRechnung schematron checks only that BT-10 is present,
// not the check digits; this function does.
func ValidLeitwegID(id string) bool {
	return leitweg.Valid(strings.ToUpper(strings.TrimSpace(id)))
}
