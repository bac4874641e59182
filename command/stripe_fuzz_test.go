package command

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/apperr"
)

// stripeSign is Stripe's v1 signature of body at unix time ts, computed here
// independently of the code under test.
func stripeSign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	return hex.EncodeToString(m.Sum(nil))
}

// FuzzStripeWebhook: the signature check of the webhook and the decoding of
// its event, as postStripeWebhook does them. A delivery signed with the
// secret verifies exactly when its timestamp is within the tolerance; a
// changed body, a wrong secret and any header that does not carry a valid
// signature are 400 invalid_signature; nothing panics.
func FuzzStripeWebhook(f *testing.F) {
	evt := `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount_received":11900,"currency":"eur"}}}`
	f.Add([]byte(evt), "whsec_dev", int64(1767225600), int64(0), "t=1767225600,v1=00")
	f.Add([]byte(`{"id":"evt_2","type":"charge.refunded","data":{"object":{"payment_intent":"pi_1","amount_refunded":500,"refunded":false}}}`),
		"whsec_dev", int64(1767225600), int64(300), "v1=zz,t=abc")
	f.Add([]byte(`{}`), "", int64(0), int64(-301), "t=1,v1=,v1=ab, t=2")
	f.Add([]byte(`{"id":1}`), "s", int64(-1), int64(1<<62), "")
	f.Add([]byte("not json"), "s", int64(1<<62), int64(-1<<62), "t=9223372036854775807,v1=00")
	f.Fuzz(func(t *testing.T, body []byte, secret string, ts, skew int64, header string) {
		tsText := strconv.FormatInt(ts, 10)
		signedAt := time.Unix(ts, 0)
		now := signedAt.Add(time.Duration(skew))
		within := now.Sub(signedAt) <= stripeTolerance && now.Sub(signedAt) >= -stripeTolerance

		signed := "t=" + tsText + ",v1=" + stripeSign(secret, tsText, body)
		err := verifyStripeSignature(signed, body, secret, now)
		if within && err != nil {
			t.Fatalf("a correct signature %d s off was refused: %v", skew/int64(time.Second), err)
		}
		if !within {
			checkSignatureErr(t, err)
		}
		// Rotation: a second, wrong v1 value does not hurt.
		if within {
			if err := verifyStripeSignature(signed+",v1=00", body, secret, now); err != nil {
				t.Fatalf("a correct signature next to a wrong one was refused: %v", err)
			}
		}
		checkSignatureErr(t, verifyStripeSignature(signed, append(body[:len(body):len(body)], ' '), secret, now))
		checkSignatureErr(t, verifyStripeSignature(signed, body, secret+"x", now))

		// Any header: accepted only when it carries the signature of body.
		if err := verifyStripeSignature(header, body, secret, now); err != nil {
			checkSignatureErr(t, err)
		} else if !carriesSignature(header, secret, body) {
			t.Fatalf("header %q accepted without the body's signature", header)
		}

		// The event decoding of the handler: never a panic; an event it
		// takes re-encodes to the same event.
		var ev StripeEvent
		if json.Unmarshal(body, &ev) != nil || ev.ID == "" || ev.Type == "" {
			return
		}
		var again StripeEvent
		if err := json.Unmarshal(mustJSON(t, ev), &again); err != nil || !reflect.DeepEqual(ev, again) {
			t.Fatalf("event round trip: %+v, then %+v (%v)", ev, again, err)
		}
	})
}

func checkSignatureErr(t *testing.T, err error) {
	t.Helper()
	if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Code != "invalid_signature" {
		t.Fatalf("want 400 invalid_signature, got %v", err)
	}
}

// carriesSignature reports whether header's last t and one of its v1
// values sign body with secret.
func carriesSignature(header, secret string, body []byte) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, strings.ToLower(v))
		}
	}
	want := stripeSign(secret, ts, body)
	for _, s := range sigs {
		if s == want {
			return true
		}
	}
	return false
}
