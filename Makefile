# o2i: order-to-invoice service.
#
# `make` lists the targets. The local stack (PostgreSQL, Redis, MinIO, a
# Kafka-protocol broker, an SMTP sink and the payment provider fake with
# stripe-mock) lives in .dev/ and is managed by cmd/devstack;
# .dev/env holds its addresses as O2I_* variables.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO          ?= go
GOTESTFLAGS ?= -count=1
BENCHFLAGS  ?=
CHAOSFLAGS  ?=

DEVSTACK := bin/devstack
O2I      := bin/o2i
LOAD_ENV := . ./.dev/env
OPENAPI  := cmd/o2i/openapi.json

# Staticcheck 2026.2.2: the release line that supports Go 1.26 (go.mod) and 1.27.
STATICCHECK_VERSION := v0.8.2

# Fuzz targets as package:Target; `make fuzz` runs each for FUZZTIME.
# Minimising a new input may take 60s by default, all of a short run's time
# on the large CII seeds; FUZZMINIMIZETIME bounds it.
FUZZTIME ?= 10s
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := \
	./command:FuzzParseOrder \
	./command:FuzzParseFulfillment \
	./command:FuzzParseCreditTransactions \
	./command:FuzzParseCreditBalances \
	./command:FuzzStripeWebhook \
	./internal/leitweg:FuzzCheck \
	./query:FuzzDecodeCursor \
	./query:FuzzDecodeTimeIDCursor \
	./internal/httpx:FuzzCheckJSON \
	./internal/einvoice:FuzzCheckXML \
	./render:FuzzReadView

REDOCLY_VERSION := 2.77.0
TOOLS_DIR       := .dev/tools
REDOCLY         := $(TOOLS_DIR)/node_modules/.bin/redocly
REDOCLY_STAMP   := $(TOOLS_DIR)/.redocly-$(REDOCLY_VERSION)
# The client generated from the OpenAPI document, which a test of cmd/o2i
# type-checks and runs against the service: openapi-typescript generates
# the types, openapi-fetch is the client, tsc (TypeScript 5, the line
# openapi-typescript supports) checks and compiles the script.
OPENAPI_TS_VERSION    := 7.13.0
OPENAPI_FETCH_VERSION := 0.17.0
TYPESCRIPT_VERSION    := 5.9.3
TSCLIENT_STAMP        := $(TOOLS_DIR)/.tsclient-$(OPENAPI_TS_VERSION)-$(OPENAPI_FETCH_VERSION)-$(TYPESCRIPT_VERSION)
STATICCHECK     := $(TOOLS_DIR)/bin/staticcheck
STATICCHECK_STAMP := $(TOOLS_DIR)/.staticcheck-$(STATICCHECK_VERSION)
# The chart's offline validation (deploy/chart_test.go): Helm 3 and
# kubeconform, pinned, built from the Go module proxy into .dev/tools/bin.
# Helm's default Kubernetes version is that of its client-go (1.34).
HELM_VERSION        := v3.19.2
KUBECONFORM_VERSION := v0.7.0
HELM                := $(TOOLS_DIR)/bin/helm
KUBECONFORM         := $(TOOLS_DIR)/bin/kubeconform
HELM_STAMP          := $(TOOLS_DIR)/.helm-$(HELM_VERSION)
KUBECONFORM_STAMP   := $(TOOLS_DIR)/.kubeconform-$(KUBECONFORM_VERSION)
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=34 \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=34
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true

# The OpenAPI lint as one shell command; a missing document is a failure.
OPENAPI_LINT = { test -f $(OPENAPI) || { echo "openapi lint: $(OPENAPI) is missing" >&2; false; }; } && $(REDOCLY) lint $(OPENAPI)

.PHONY: help run test build down clean bench screenshots chaos lint fuzz stack migrate status openapi devstack tools staticcheck referee-deps browser-deps deploy-tools

help: ## List the targets
	@echo "usage: make <target>"
	@echo
	@awk -F':.*## ' '/^[a-z][a-z-]*:.*## /{printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: build stack ## Bring up the stack, migrate, seed a dev project + API key + the console owner invitation, serve http://127.0.0.1:8080 (API and console)
	$(DEVSTACK) seed -o2i $(O2I)
	$(LOAD_ENV) && exec $(O2I) serve

test: migrate tools referee-deps browser-deps deploy-tools ## Stack + migrations and the pinned tools, then go vet, go test (the chart's validation included) and the OpenAPI lint (all run; fails if any fails)
	@failed=""; \
	echo "==> go vet ./..."; \
	$(GO) vet ./... || failed="$$failed go-vet"; \
	echo "==> redocly lint $(OPENAPI)"; \
	( $(OPENAPI_LINT) ) || failed="$$failed openapi-lint"; \
	echo "==> go test $(GOTESTFLAGS) ./... (with .dev/env)"; \
	( $(LOAD_ENV) && $(GO) test $(GOTESTFLAGS) ./... ) || failed="$$failed go-test"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi

build: ## Build the service binary bin/o2i
	$(GO) build -o $(O2I) ./cmd/o2i

stack: devstack ## Bring up PostgreSQL, Redis, MinIO, Kafka, the SMTP sink and the Stripe fake under .dev/ (no server) and write .dev/env
	$(DEVSTACK) up

migrate: build stack ## Apply the database migrations to the local stack
	$(LOAD_ENV) && $(O2I) migrate

status: devstack ## Show which processes of the local stack run
	@$(DEVSTACK) status

down: devstack ## Stop every process of the local stack
	$(DEVSTACK) down

clean: devstack ## Stop the local stack and remove .dev/
	$(DEVSTACK) clean

bench: migrate referee-deps ## Benchmarks and load runs on the local stack; writes the figures into README.md and the capacity section of docs/operations.md (BENCHFLAGS=-only=roles ...)
	$(GO) build -o bin/benchmark ./cmd/benchmark
	$(LOAD_ENV) && bin/benchmark -readme README.md -operations docs/operations.md $(BENCHFLAGS)

screenshots: migrate browser-deps ## PNGs of the console's main pages (a seeded project, 1280x800) into docs/screenshots/
	$(LOAD_ENV) && $(GO) test -tags screenshots -count=1 -run '^TestScreenshots$$' ./cmd/o2i/

chaos: migrate ## Fault run: 10,000 orders to two processes of every role, one of each killed (SIGKILL), a PostgreSQL crash, broker kill, Redis flush, MinIO outage; reconciles (archive objects and e-mail included), writes README figures (CHAOSFLAGS=-orders 20000 ...); then 10,000 orders of a project without seller data: 1 to 3 tasks, released at the drain rate (CHAOSHELDFLAGS)
	$(GO) build -o bin/chaos ./cmd/chaos
	$(LOAD_ENV) && bin/chaos -readme README.md $(CHAOSFLAGS)
	$(LOAD_ENV) && bin/chaos -scenario held $(CHAOSHELDFLAGS)

lint: tools staticcheck ## OpenAPI lint, go vet, staticcheck and gofmt check (all run; fails if any fails)
	@failed=""; \
	echo "==> redocly lint $(OPENAPI)"; \
	( $(OPENAPI_LINT) ) || failed="$$failed openapi-lint"; \
	echo "==> go vet ./..."; \
	$(GO) vet ./... || failed="$$failed go-vet"; \
	echo "==> staticcheck ./..."; \
	$(STATICCHECK) ./... || failed="$$failed staticcheck"; \
	echo "==> gofmt -l"; \
	unformatted=$$(find . \( -path ./.dev -o -path ./bin -o -path ./vendor -o -name testdata -o -name node_modules \) -prune -o -name '*.go' -print | xargs -r gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-ed:"; echo "$$unformatted"; failed="$$failed gofmt"; fi; \
	if [ -n "$$failed" ]; then echo "make lint: failed:$$failed" >&2; exit 1; fi

fuzz: ## Run every fuzz target for FUZZTIME (default 10s) each, one after the other (make fuzz FUZZTIME=2m)
	@failed=""; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "==> go test -run '^$$' -fuzz '^$$name$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "make fuzz: failed:$$failed" >&2; exit 1; fi

openapi: build ## Regenerate cmd/o2i/openapi.json from the service (o2i openapi)
	$(O2I) openapi > $(OPENAPI).tmp || { rm -f $(OPENAPI).tmp; exit 1; }
	mv $(OPENAPI).tmp $(OPENAPI)

devstack:
	@$(GO) build -o $(DEVSTACK) ./cmd/devstack

# The Debian packages of the vendored e-invoice validator
# (internal/einvoice/referee/official/validate-einvoice); the tests run it with
# --no-install, so the missing ones are installed here.
SAXON_JAR := /usr/share/java/Saxon-HE.jar

referee-deps:
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	test -f $(SAXON_JAR) || missing="$$missing libsaxonhe-java"; \
	command -v xmllint >/dev/null 2>&1 || missing="$$missing libxml2-utils"; \
	command -v qpdf >/dev/null 2>&1 || missing="$$missing qpdf"; \
	{ command -v pdfinfo >/dev/null 2>&1 && command -v pdffonts >/dev/null 2>&1; } || missing="$$missing poppler-utils"; \
	command -v jq >/dev/null 2>&1 || missing="$$missing jq"; \
	if [ -n "$$missing" ]; then \
		echo "validator tools missing: installing$$missing from the OS packages"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing </dev/null; \
	fi

# The console's browser tests drive Debian's headless Chromium (chromedp
# against the installed binary, never a browser a launcher downloads).
browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "browser missing: installing chromium from the OS packages"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium </dev/null; \
	fi

# Staticcheck, pinned, built into .dev/tools/bin by the go command.
staticcheck:
	@if [ ! -x $(STATICCHECK) ] || [ ! -f $(STATICCHECK_STAMP) ]; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into $(TOOLS_DIR)/bin"; \
		mkdir -p $(TOOLS_DIR)/bin && rm -f $(TOOLS_DIR)/.staticcheck-*; \
		GOBIN=$(CURDIR)/$(TOOLS_DIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && touch $(STATICCHECK_STAMP); \
	fi

# Helm and kubeconform, pinned, for the chart's validation in `make test`.
deploy-tools: $(HELM_STAMP) $(KUBECONFORM_STAMP)

$(HELM_STAMP):
	@echo "installing helm $(HELM_VERSION) into $(TOOLS_DIR)/bin"
	@mkdir -p $(TOOLS_DIR)/bin && rm -f $(TOOLS_DIR)/.helm-*
	GOBIN=$(CURDIR)/$(TOOLS_DIR)/bin CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@touch $@

$(KUBECONFORM_STAMP):
	@echo "installing kubeconform $(KUBECONFORM_VERSION) into $(TOOLS_DIR)/bin"
	@mkdir -p $(TOOLS_DIR)/bin && rm -f $(TOOLS_DIR)/.kubeconform-*
	GOBIN=$(CURDIR)/$(TOOLS_DIR)/bin CGO_ENABLED=0 $(GO) install -trimpath -ldflags '-s -w -X main.version=$(KUBECONFORM_VERSION)' github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	@touch $@

# The npm tools, pinned, installed into .dev/tools: Redocly CLI (the
# OpenAPI lint) and the generated client's toolchain. One after the other:
# both install into the same prefix.
tools: $(REDOCLY_STAMP) $(TSCLIENT_STAMP)

# Node.js and npm from the OS packages when missing.
NPM_ENSURE = if ! command -v npm >/dev/null 2>&1; then \
		echo "npm not found: installing Node.js from the OS packages"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs </dev/null; \
		command -v npm >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm </dev/null; \
	fi
NPM_INSTALL = npm install --prefix $(TOOLS_DIR) --save-exact --no-audit --no-fund --no-update-notifier --loglevel=error

$(REDOCLY_STAMP):
	@$(NPM_ENSURE)
	@mkdir -p $(TOOLS_DIR)
	$(NPM_INSTALL) @redocly/cli@$(REDOCLY_VERSION) </dev/null
	@rm -f $(TOOLS_DIR)/.redocly-* && touch $@

$(TSCLIENT_STAMP): | $(REDOCLY_STAMP)
	@$(NPM_ENSURE)
	@mkdir -p $(TOOLS_DIR)
	$(NPM_INSTALL) openapi-typescript@$(OPENAPI_TS_VERSION) openapi-fetch@$(OPENAPI_FETCH_VERSION) typescript@$(TYPESCRIPT_VERSION) </dev/null
	@rm -f $(TOOLS_DIR)/.tsclient-* && touch $@
