// A client generated from the service's OpenAPI document (openapi-typescript
// types, openapi-fetch calls) places an order, configures its product,
// delivers the payment provider's webhook and reads the order back. The Go
// test TestGeneratedTypeScriptClient generates api.d.ts next to this file,
// type-checks and compiles it with tsc and runs it with Node:
//
//   node dist/client.js <base URL> <API key> <project id> <webhook secret> <suffix>
//
// It prints one JSON line of what it saw and exits 1 on the first failure.
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

// Node's process, declared here: the script needs no type packages beyond
// the client's own.
declare const process: { argv: string[]; exit(code: number): never };

type Order = components["schemas"]["OrderInput"];
type StripeEvent = components["schemas"]["StripeEvent"];

const [baseUrl, apiKey, projectId, webhookSecret, suffix] = process.argv.slice(2);
if (!suffix) {
  console.error("usage: client.js <base URL> <API key> <project id> <webhook secret> <suffix>");
  process.exit(2);
}

function fail(what: string, detail: unknown): never {
  console.error(`generated client: ${what}: ${JSON.stringify(detail)}`);
  process.exit(1);
}

const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
const provider = createClient<paths>({ baseUrl }); // the webhook is public: signed, no API key

// stripeSignature is the Stripe-Signature header of body: HMAC-SHA256 of
// "<unix time>.<body>" with the webhook secret, hex.
async function stripeSignature(secret: string, body: string): Promise<string> {
  const t = Math.floor(Date.now() / 1000);
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(`${t}.${body}`)));
  return `t=${t},v1=${Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function main(): Promise<void> {
  const orderNo = `TS-${suffix}`;
  const productId = `ts-course-${suffix}`;
  const paymentRef = `pi_ts_${suffix}`;
  const order: Order = {
    orderNo,
    paymentRef,
    paymentGateway: "stripe",
    billingAddress: { country_code: "DE", name: "Max Muster", street: "Weg 1", postal_code: "10115", city: "Berlin" },
    service_period: { start_date: "2026-11-01", end_date: "2026-11-30" },
    items: [{ name: "Kurs", productId, quantity: 1, unitNetCents: 10000, taxRate: 19 }],
  };

  // The order: created, then replayed.
  const created = await api.POST("/v1/orders", { params: { header: { "Idempotency-Key": orderNo } }, body: order });
  if (created.response.status !== 201 || !created.data) fail("create order", { status: created.response.status, error: created.error });
  const replay = await api.POST("/v1/orders", { params: { header: { "Idempotency-Key": orderNo } }, body: order });
  if (replay.response.status !== 200 || replay.response.headers.get("Idempotent-Replayed") !== "true" || replay.data?.data.id !== created.data.data.id) {
    fail("replay order", { status: replay.response.status, replayed: replay.response.headers.get("Idempotent-Replayed") });
  }

  // A refused order: the error body is typed.
  const refused = await api.POST("/v1/orders", {
    params: { header: { "Idempotency-Key": `${orderNo}-refused` } },
    body: { ...order, orderNo: `${orderNo}-refused`, items: [] },
  });
  if (refused.response.status !== 422 || refused.error?.error.code !== "validation_failed" || refused.error.error.field !== "items") {
    fail("refused order", { status: refused.response.status, error: refused.error });
  }

  // The product of its line: a deferral, then null (revenue at the date of supply).
  const deferred = await api.PUT("/v1/products/{productId}", {
    params: { path: { productId } },
    body: { revenueRecognition: { periodMonths: 12 } },
  });
  const deferral = deferred.data?.data.revenueRecognition;
  if (deferred.response.status !== 200 || deferral?.mode !== "saas" || deferral.periodMonths !== 12) {
    fail("configure product", { status: deferred.response.status, body: deferred.data ?? deferred.error });
  }
  const immediate = await api.PUT("/v1/products/{productId}", { params: { path: { productId } }, body: { revenueRecognition: null } });
  if (immediate.response.status !== 200 || immediate.data?.data.revenueRecognition?.mode !== "immediate") {
    fail("configure product with null", { status: immediate.response.status, body: immediate.data ?? immediate.error });
  }

  // The provider's event, as Stripe sends it: more members than the
  // service reads, nulls, an expanded charge.
  const event: StripeEvent = {
    id: `evt_ts_${suffix}`,
    object: "event",
    api_version: "2024-06-20",
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: "payment_intent.succeeded",
    data: {
      object: {
        id: paymentRef,
        object: "payment_intent",
        amount: 11900,
        amount_received: 11900,
        currency: "eur",
        next_action: null,
        payment_method_types: ["card"],
        latest_charge: {
          id: `ch_ts_${suffix}`,
          payment_method_details: { type: "card", card: { brand: "visa", funding: "credit", last4: "4242" } },
        },
      },
    },
  };
  const signature = await stripeSignature(webhookSecret, JSON.stringify(event)); // openapi-fetch sends JSON.stringify(body)
  const hook = await provider.POST("/v1/webhooks/stripe/{projectId}", {
    params: { path: { projectId }, header: { "Stripe-Signature": signature } },
    body: event,
  });
  if (hook.response.status !== 200 || !hook.data?.data.applied || hook.data.data.orderNo !== orderNo) {
    fail("webhook", { status: hook.response.status, body: hook.data ?? hook.error });
  }
  const again = await provider.POST("/v1/webhooks/stripe/{projectId}", {
    params: { path: { projectId }, header: { "Stripe-Signature": await stripeSignature(webhookSecret, JSON.stringify(event)) } },
    body: event,
  });
  if (again.response.status !== 200 || again.data?.data.duplicate !== true) {
    fail("repeated webhook", { status: again.response.status, body: again.data ?? again.error });
  }
  const forged = await provider.POST("/v1/webhooks/stripe/{projectId}", {
    params: { path: { projectId }, header: { "Stripe-Signature": await stripeSignature("whsec_wrong", JSON.stringify(event)) } },
    body: event,
  });
  if (forged.response.status !== 400 || forged.error?.error.code !== "invalid_signature") {
    fail("forged webhook", { status: forged.response.status, error: forged.error });
  }

  // The order status: paid, with an ETag that answers 304.
  let payment = "";
  let etag = "";
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const st = await api.GET("/v1/orders/{orderNo}", { params: { path: { orderNo } } });
    if (st.data) {
      payment = st.data.data.payment;
      etag = st.response.headers.get("ETag") ?? "";
      if (payment === "paid") break;
    } else if (st.response.status !== 404) {
      fail("order status", { status: st.response.status, error: st.error });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (payment !== "paid" || etag === "") fail("order status", { payment, etag });
  const unchanged = await api.GET("/v1/orders/{orderNo}", { params: { path: { orderNo }, header: { "If-None-Match": etag } } });
  if (unchanged.response.status !== 304 && unchanged.response.status !== 200) {
    fail("If-None-Match", { status: unchanged.response.status });
  }
  const missing = await api.GET("/v1/orders/{orderNo}", { params: { path: { orderNo: `${orderNo}-none` } } });
  if (missing.response.status !== 404 || missing.error?.error.code !== "order_not_found") {
    fail("unknown order", { status: missing.response.status, error: missing.error });
  }

  console.log(JSON.stringify({ orderNo, orderId: created.data.data.id, payment, eventId: hook.data.data.eventId }));
}

// What the generated types must refuse: checked by tsc, never run.
export function refusedByTheTypes(): void {
  // @ts-expect-error the order's body is required
  void api.POST("/v1/orders", { params: { header: { "Idempotency-Key": "k" } } });
  // @ts-expect-error the Idempotency-Key header is required
  void api.POST("/v1/orders", { params: { header: {} }, body: {} as Order });
  void provider.POST("/v1/webhooks/stripe/{projectId}", {
    params: { path: { projectId: "p" }, header: { "Stripe-Signature": "s" } },
    // @ts-expect-error the webhook's body is the event object, not a string
    body: "{}",
  });
  // @ts-expect-error the webhook's body is required
  void provider.POST("/v1/webhooks/stripe/{projectId}", { params: { path: { projectId: "p" }, header: { "Stripe-Signature": "s" } } });
  // @ts-expect-error an event has an id and a type
  const partial: StripeEvent = { data: { object: {} } };
  void partial;
}

main().catch((err: unknown) => fail("unexpected", String(err)));
