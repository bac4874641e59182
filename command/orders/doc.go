// Package orders is what both roles of the write side know of an order:
// the order repository (order_repo.go: an order row locked FOR UPDATE, its
// change, its state published), the mapping of a stored order to the
// invoice engine's input (billing_order.go), the provider's payments
// matched to orders (payments.go), the review tasks and the holds they put
// on an order (tasks.go), and the outbound e-mail queue that urgent tasks
// and archived documents feed (mail_queue.go; the mailer of
// command/invoicing sends it). The API's use cases (command) and the
// invoicer (command/invoicing) both import it, and it imports neither.
// It imports internal packages only; never command, command/invoicing, query, projection, render, archive or a command under cmd.
package orders
