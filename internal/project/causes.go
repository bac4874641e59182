package project

import (
	"context"
	"reflect"

	"github.com/jackc/pgx/v5"
)

// Causes of the project: a due order is held back by them before it is
// computed, as ONE task per project and cause (subject SharedSubject) that
// holds every order it concerns, with one notice to the invoice contact.
// Fixing the cause (Apply) reports it fixed in the same transaction, and
// the invoicer then releases the held orders in its workers.
const (
	// CauseSellerData: the seller data lacks what every invoice needs
	// (name; VAT ID or tax number, § 14 UStG, BR-S-02), or what an XRechnung
	// needs beside the telephone (BR-DE-3, -4, -5, -7).
	CauseSellerData = "seller_data_incomplete"
	// CauseContactPhone: an XRechnung needs the invoice contact's telephone
	// (BR-DE-6).
	CauseContactPhone = "xrechnung_contact_phone_missing"
	// CauseProviderRights: the payment provider refused the project's key
	// (no rights to write customers or payment intents, or no key stored).
	CauseProviderRights = "provider_rights_missing"
	// CauseValidation is the per-order task of a document that would break
	// an EN 16931 / XRechnung rule: a change of settings may fix it.
	CauseValidation = "invoice_validation_failed"
)

// SharedSubject is the subject of a task of a project's cause.
const SharedSubject = "project"

// MissingSellerData names the settings an invoice of the project lacks (in
// the settings' JSON names; two names joined by " or " when either will
// do). xrechnung adds what an XRechnung needs beside the telephone.
func (s Settings) MissingSellerData(xrechnung bool) []string {
	var missing []string
	if s.SellerName == "" {
		missing = append(missing, "sellerName")
	}
	if s.SellerVATID == "" && s.SellerTaxNumber == "" {
		missing = append(missing, "sellerVatId or sellerTaxNumber")
	}
	if !xrechnung {
		return missing
	}
	for _, f := range []struct{ name, value string }{
		{"sellerCity", s.SellerCity}, {"sellerPostalCode", s.SellerPostalCode},
		{"contactName", s.ContactName}, {"contactEmail", s.ContactEmail},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	return missing
}

// CauseOf returns the cause of the project that holds a due order back
// (xrechnung: the order has a Leitweg-ID) and the settings it misses, or
// "" when the project's settings let the order be computed. The seller
// data comes first: an order lacking both is held for the seller data.
func (s Settings) CauseOf(xrechnung bool) (kind string, missing []string) {
	if m := s.MissingSellerData(xrechnung); len(m) > 0 {
		return CauseSellerData, m
	}
	if xrechnung && s.ContactPhone == "" {
		return CauseContactPhone, []string{"contactPhone"}
	}
	return "", nil
}

// FixedCauses returns the kinds of open tasks that a change of the
// settings from before to after may have fixed; their held orders are then
// evaluated again. Nothing changed: none. A cause the new settings still
// show (seller data still incomplete for every invoice, no phone, the same
// provider key) is not reported fixed.
func FixedCauses(before, after Settings) []string {
	if reflect.DeepEqual(before, after) {
		return nil
	}
	fixed := []string{CauseValidation}
	if len(after.MissingSellerData(false)) == 0 {
		fixed = append(fixed, CauseSellerData)
	}
	if after.ContactPhone != "" {
		fixed = append(fixed, CauseContactPhone)
	}
	if after.StripeAPIKey != "" && after.StripeAPIKey != before.StripeAPIKey {
		fixed = append(fixed, CauseProviderRights)
	}
	return fixed
}

// reportFixedTx records the open tasks of the project of the kinds fixed
// as fixed (cause_fixes), in the transaction of the change.
func reportFixedTx(ctx context.Context, tx pgx.Tx, projectID string, fixed []string) error {
	if len(fixed) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO cause_fixes (task_id, project_id, reason)
		SELECT id, project_id, 'project settings changed' FROM tasks WHERE project_id = $1 AND status = 'open' AND kind = ANY($2)
		ON CONFLICT (task_id) DO UPDATE SET fixed_at = now(), reason = excluded.reason`, projectID, fixed)
	return err
}
