package apikey

import "time"

// SetClock makes a read the given clock (tests).
func SetClock(a *Authenticator, now func() time.Time) { a.now = now }

// CacheSizes returns how many real and how many unknown keys a holds.
func CacheSizes(a *Authenticator) (known, unknown int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cache), a.unknown.Len()
}

// WellFormed exposes wellFormed (tests).
func WellFormed(key string) bool { return wellFormed(key) }
