// Package invoicing is the invoicer role: the consumer of the order events
// (invoicer.go) that issues the invoices of orders that became due
// (issue_invoices.go), cancels the documents that no longer match their
// order (cancellations.go), credits refunds (credit_notes.go), creates the
// provider's payment orders of bank transfers first (provider_transfer.go)
// and archives what it issued (archive_invoice.go; archive_backfill.go
// anchors documents archived before the archive was recorded). Calls to the
// provider and the object store are bounded and guarded by a breaker per
// dependency and project (dependencies.go). Beside the consumer run the
// retry workers (retries.go) over the retry table (dead_letters.go), the
// mailer (deliver_mail.go) and the reconciler (reconcile.go) with the
// archive repair (archive_repair.go) and the failed documents
// (failed_invoices.go). What it shares with the API's use cases
// (the order repository, payments, review tasks, the e-mail queue) is in
// command/orders.
// It imports command/orders, internal packages, archive and render; never command, query, projection or a command under cmd.
package invoicing
