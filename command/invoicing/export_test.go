package invoicing

import "context"

// Process exposes the invoicer's handling of one order event: its tries,
// then the dead letter with its task and the failed documents.
func (iv *Invoicer) Process(ctx context.Context, raw []byte) error {
	return iv.process(ctx, raw)
}
