package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestPaidInvoicesSayWhatHappenedToTheMoney: orders paid through the
// provider's webhook get invoices that say so. In a live project with the
// seller's IBAN: a card-paid order (older API shape: embedded charges), an
// order paid by store credit and a debit card (current shape: expanded
// latest_charge), a PayPal order (payment_method_types only), an order paid
// below its total and a card-paid order refunded in part. BT-113, BT-115,
// the means code, the card digits and the terms are compared with
// hand-written expectations, the seller's IBAN never appears on a document
// with nothing due, and the official validator judges every document.
func TestPaidInvoicesSayWhatHappenedToTheMoney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	const secret = "whsec_truth_test"
	withWebhookSecret(t, pool, pid, secret)
	sellerIBAN := testenv.DemoSeller().SellerIBAN
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	order := func(no, extra string, gross int) {
		t.Helper()
		body := fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","email":"kunde@example.org",
			"billingAddress":{"country_code":"DE","name":"Erika Musterfrau","street":"Lindenstraße 12","postal_code":"50667","city":"Köln"},
			"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":%d,"taxRate":19}]%s}`, no, no, gross, extra)
		if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", no, r.Status, r.Body)
		}
	}
	pay := func(no string, amount int, method string) {
		t.Helper()
		stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(
			`{"id":"pi_%s","object":"payment_intent","amount":%d,"amount_received":%d,"currency":"eur"%s}`, no, amount, amount, method))
	}
	xmlOf := func(d map[string]any) string {
		t.Helper()
		r := c.Do("GET", "/v1/invoices/"+d["id"].(string)+"/xml", key, nil)
		if r.Status != 200 {
			t.Fatalf("XML of %s: %d", d["number"], r.Status)
		}
		return strings.Join(strings.Fields(string(r.Body)), "")
	}

	card, mixed, paypal, short, refunded := "PT-C-"+suffix, "PT-M-"+suffix, "PT-P-"+suffix, "PT-S-"+suffix, "PT-R-"+suffix
	order(card, "", 11900)
	pay(card, 11900, `,"charges":{"object":"list","data":[{"id":"ch_1","payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"4242"}}}]}`)
	order(mixed, `,"creditRedemptions":[{"type":"referral_credit","amountCents":1900,"externalRef":"cr_`+suffix+`"}],"grossTotalCents":11900`, 11900)
	pay(mixed, 10000, `,"latest_charge":{"id":"ch_2","payment_method_details":{"type":"card","card":{"brand":"mastercard","funding":"debit","last4":"5100"}}},"payment_method_types":["card"]`)
	order(paypal, "", 2990)
	pay(paypal, 2990, `,"latest_charge":"ch_3","payment_method_types":["paypal"]`)
	order(short, "", 11900)
	pay(short, 10000, `,"payment_method_types":["card"]`)
	order(refunded, "", 11900)
	pay(refunded, 11900, `,"latest_charge":{"id":"ch_5","payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"1881"}}}`)
	documents(t, c, key, refunded, "invoiced", 1)
	stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(
		`{"id":"ch_5","object":"charge","payment_intent":"pi_%s","amount":11900,"amount_refunded":2000,"refunded":false,"currency":"eur"}`, refunded))

	cases := []struct {
		orderNo string
		docs    int
		doc     int      // which document
		want    []string // in the XML without white space
	}{
		{card, 1, 0, []string{"<ram:TypeCode>54</ram:TypeCode>", "<ram:ApplicableTradeSettlementFinancialCard><ram:ID>4242</ram:ID>",
			"<ram:TotalPrepaidAmount>119.00</ram:TotalPrepaidAmount><ram:DuePayableAmount>0.00</ram:DuePayableAmount>",
			"perKarte(Visa,endetauf4242)überStripe(pi_" + card + ").EsistkeineZahlungmehrzuleisten."}},
		{mixed, 1, 0, []string{"<ram:TypeCode>55</ram:TypeCode>", "<ram:ID>5100</ram:ID>",
			"<ram:TotalPrepaidAmount>119.00</ram:TotalPrepaidAmount><ram:DuePayableAmount>0.00</ram:DuePayableAmount>",
			"perKarte(Mastercard,endetauf5100)überStripe(pi_" + mixed + ").MitGuthabenbezahlt:19.00EUR(Ref.cr_" + suffix + ")."}},
		{paypal, 1, 0, []string{"<ram:TypeCode>68</ram:TypeCode><ram:Information>PayPalüberStripe</ram:Information>",
			"<ram:TotalPrepaidAmount>29.90</ram:TotalPrepaidAmount><ram:DuePayableAmount>0.00</ram:DuePayableAmount>"}},
		{short, 1, 0, []string{"<ram:TypeCode>58</ram:TypeCode>", "<ram:IBANID>" + sellerIBAN + "</ram:IBANID>",
			"<ram:TotalPrepaidAmount>100.00</ram:TotalPrepaidAmount><ram:DuePayableAmount>19.00</ram:DuePayableAmount>",
			"perKarteüberStripe(pi_" + short + ").Restbetrag19.00EURzahlbarinnerhalbvon14Tagen", "<ram:DueDateDateTime>",
			"VerwendungszwecksPT-S-" + suffix}},
		{refunded, 2, 1, []string{"<ram:TypeCode>381</ram:TypeCode>", "<ram:TypeCode>54</ram:TypeCode>", "<ram:ID>1881</ram:ID>",
			"<ram:TotalPrepaidAmount>20.00</ram:TotalPrepaidAmount><ram:DuePayableAmount>0.00</ram:DuePayableAmount>",
			"Erstattetam", "perKarte(Visa,endetauf1881)überStripe(pi_" + refunded + ")"}},
	}
	var all []map[string]any
	for _, tc := range cases {
		docs := documents(t, c, key, tc.orderNo, "invoiced", tc.docs)
		all = append(all, docs...)
		x := xmlOf(docs[tc.doc])
		for _, w := range tc.want {
			if !strings.Contains(x, w) {
				t.Errorf("%s lacks %s:\n%s", tc.orderNo, w, x)
			}
		}
		if strings.Contains(x, "<ram:DuePayableAmount>0.00</ram:DuePayableAmount>") && strings.Contains(x, sellerIBAN) {
			t.Errorf("%s: nothing is due, yet the seller's IBAN is on it:\n%s", tc.orderNo, x)
		}
	}
	// The short payment is a task for the accountant.
	var tasks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'payment_amount_mismatch' AND subject = $2 AND status = 'open'`,
		pid, short).Scan(&tasks); err != nil || tasks != 1 {
		t.Errorf("payment_amount_mismatch tasks of %s: %d (%v), want 1", short, tasks, err)
	}
	refereeFiles(t, c, key, all)
}
