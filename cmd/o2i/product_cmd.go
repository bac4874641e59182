package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/catalog"
)

// productCmd is `o2i product set`: a product's revenue recognition, as
// PUT /v1/products/{productId} sets it (orders held for it are released by
// the invoicer within seconds); `o2i product list` lists the catalogue with
// the ids that address products matched by sku or name.
func productCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: o2i product set --project ID --product-id ID (--period-months N | --immediate)\n" +
		"       o2i product list --project ID [--unconfigured]\n"
	if len(args) > 0 && args[0] == "list" {
		return productList(ctx, cfg, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "set" {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	f := newAdminFlags("product set", cfg, stderr)
	id := f.String("project", "", "project id (required)")
	productID := f.String("product-id", "", "the caller's article id (productId of the order lines), or the catalogue id of `o2i product list` (required)")
	months := f.Int("period-months", 0, "defer the revenue over this many months (1 to 120)")
	immediate := f.Bool("immediate", false, "recognise the revenue at the date of supply")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *id == "" || *productID == "" || f.isSet("period-months") == *immediate {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	var period *int
	if !*immediate {
		period = months
	}
	settings, err := command.RevenueRecognitionSettings(period)
	if err != nil {
		return err
	}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
		return command.ConfigureProduct(ctx, pool, *id, *productID, settings)
	})
}

// productList prints the project's catalogue as a JSON array: id, productId,
// matchedBy, sku, name and revenueRecognition of each product, oldest first.
func productList(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	f := newAdminFlags("product list", cfg, stderr)
	id := f.String("project", "", "project id (required)")
	unconfigured := f.Bool("unconfigured", false, "only products without a revenue recognition")
	if err := f.parse(args); err != nil {
		return err
	}
	if *id == "" {
		fmt.Fprint(stderr, "usage: o2i product list --project ID [--unconfigured]\n")
		return errUsage
	}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
		ps, err := catalog.List(ctx, pool, *id)
		if err != nil {
			return nil, err
		}
		out := []command.ProductResult{}
		for _, p := range ps {
			if *unconfigured && p.RevenueRecognition != "" {
				continue
			}
			out = append(out, command.ProductOf(p))
		}
		return out, nil
	})
}
