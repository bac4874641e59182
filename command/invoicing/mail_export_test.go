package invoicing

import "context"

// Claim is one of the mailer's claims, for tests of a stale claimer.
type Claim struct{ d dueDelivery }

// ID is the claimed delivery's id.
func (c Claim) ID() string { return c.d.id }

// MessageID is the claimed delivery's Message-ID.
func (c Claim) MessageID() string { return c.d.messageID }

// ClaimOne exposes the claim of one due delivery.
func (m *Mailer) ClaimOne(ctx context.Context) (Claim, bool, error) {
	d, ok, err := m.claim(ctx, nil)
	return Claim{d}, ok, err
}

// Deliver exposes composing, renewing the claim and sending: attempted is
// false when the claim was lost before the session.
func (m *Mailer) Deliver(ctx context.Context, c Claim) (attempted bool, cause error) {
	conn := m.sender.Conn()
	defer conn.Close()
	return m.deliver(ctx, conn, c.d)
}

// Record exposes recording an attempt's outcome under the claim.
func (m *Mailer) Record(ctx context.Context, c Claim, cause error) error {
	return m.record(ctx, c.d, cause)
}

// HandOff puts claimed c into m's hand-off queue, as archiving does, with a
// queue of one place when the mailer has not run.
func (m *Mailer) HandOff(c Claim) {
	if m.handoff == nil {
		m.handoff = make(chan dueDelivery, 1)
	}
	if !m.reserve(c.d.projectID) {
		panic("no place to hand off to")
	}
	m.handOff(c.d)
}

// GiveBack exposes ending the claims of what is still handed off.
func (m *Mailer) GiveBack() { m.giveBack() }
