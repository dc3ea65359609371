# ragkg: `make run` to use it, `make test` to test it. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= $(or $(RAGKG_VENV),$(HOME)/.cache/ragkg/venv)
PY := $(VENV)/bin/python
SERVICES := $(PY) scripts/services.py

# Settings come from the environment; these targets read .env first (the environment wins).
WITH_ENV := bash scripts/with-env.sh

# The test suite sets its own environment (tests/_environment.py): its own ports
# and state under var/test, so it never touches a running development stack.
LINT_ENV := DJANGO_DEBUG=1 DJANGO_SECRET_KEY=lint

.PHONY: help setup run up down status doctor migrate graph-schema chromium test test-unit lint format bench-ingest bench-vectors bench-answers bench-scale bench-answer-quality bench-not-found bench-multihop train-reranker bench-quality bench-encoders bench-encoders-multilingual bench-space-scale bench-analysis bench-attribution bench-ledger attribution-calibrate

help:
	@echo "make run      set up this machine, start everything, serve http://127.0.0.1:8000"
	@echo "make test     run the whole test suite (lint, unit and integration, real services)"
	@echo "make up       start Neo4j, Redis, the Celery worker and the web server in the background"
	@echo "make down     stop exactly what 'make up' started"
	@echo "make status | doctor | migrate | graph-schema | lint | format | bench-ingest | bench-vectors | bench-answers | bench-scale | bench-answer-quality | bench-not-found | bench-multihop | train-reranker | bench-quality | bench-encoders | bench-encoders-multilingual | bench-space-scale | bench-analysis | bench-attribution | bench-ledger | bench-load | bench-warm | attribution-calibrate"

setup:
	@RAGKG_VENV="$(VENV)" bash scripts/bootstrap.sh

run: setup
	@$(WITH_ENV) bash scripts/run.sh "$(PY)"

up: setup
	@$(WITH_ENV) $(SERVICES) up
	@$(WITH_ENV) bash -c 'echo "ragkg is up: http://$${WEB_HOST:-127.0.0.1}:$${WEB_PORT:-8000}/  (health: /healthz, stop: make down)"'

down:
	@$(WITH_ENV) $(SERVICES) down

status:
	@$(WITH_ENV) $(SERVICES) status

doctor:
	@$(WITH_ENV) $(PY) manage.py doctor

migrate: setup
	@$(WITH_ENV) bash -c 'mkdir -p "$${RAGKG_STATE_DIR:-var}" && "$(PY)" manage.py migrate --noinput'

graph-schema:
	@$(WITH_ENV) $(PY) manage.py graph_schema

# Benchmarks run against a private Neo4j (state under var/bench, port 27687), wiped first.
BENCH_ENV := RAGKG_STATE_DIR=var/bench DJANGO_DEBUG=1 DATABASE_URL= NEO4J_URI=bolt://127.0.0.1:27687 \
	NEO4J_PASSWORD=ragkg-bench-password REDIS_URL=redis://127.0.0.1:26379/0 RAGKG_MANAGED_SERVICES=neo4j

bench-ingest: setup
	rm -rf var/bench && mkdir -p var/bench
	env $(BENCH_ENV) $(SERVICES) up neo4j
	env $(BENCH_ENV) $(PY) manage.py migrate -v 0
	env $(BENCH_ENV) $(PY) benchmarks/ingest_throughput.py $(BENCH_ARGS); rc=$$?; env $(BENCH_ENV) $(SERVICES) down; exit $$rc

# FAISS against Neo4j's vector index on the same vectors, with a private Neo4j of its own
# (state under var/bench-vectors, ports 37687/36379/38000), wiped first and stopped after.
BENCH_VECTORS_ENV := RAGKG_STATE_DIR=var/bench-vectors DJANGO_DEBUG=1 DATABASE_URL= \
	NEO4J_URI=bolt://127.0.0.1:37687 NEO4J_PASSWORD=ragkg-bench-password NEO4J_HEAP=2g NEO4J_PAGE_CACHE=1g \
	REDIS_URL=redis://127.0.0.1:36379/0 WEB_PORT=38000 RAGKG_MANAGED_SERVICES=neo4j

bench-vectors: setup
	rm -rf var/bench-vectors && mkdir -p var/bench-vectors
	env $(BENCH_VECTORS_ENV) $(SERVICES) up neo4j
	env $(BENCH_VECTORS_ENV) $(PY) benchmarks/vector_search.py $(BENCH_ARGS); rc=$$?; \
		env $(BENCH_VECTORS_ENV) $(SERVICES) down; exit $$rc

# Answering latency (retrieval stages at 100k chunks, generation, 8 concurrent clients) on a private
# stack of its own (state under var/bench-answers, ports 47687/46379/48000), wiped first; Neo4j and
# Redis start here, the Celery worker and web server for the load phase (benchmarks/answer_latency.py);
# everything is stopped after, also on failure. BENCH_ARGS=--quick for a smoke run.
BENCH_ANSWERS_ENV := RAGKG_STATE_DIR=var/bench-answers DJANGO_DEBUG=0 DJANGO_SECRET_KEY=bench-answers-throwaway RAGKG_HTTPS=0 \
	DATABASE_URL= NEO4J_URI=bolt://127.0.0.1:47687 NEO4J_PASSWORD=ragkg-bench-password NEO4J_HEAP=2g \
	NEO4J_PAGE_CACHE=1g REDIS_URL=redis://127.0.0.1:46379/0 WEB_PORT=48000 \
	RAGKG_MANAGED_SERVICES=neo4j,redis,celery,web ANSWER_QUEUE_TIMEOUT=120

bench-answers: setup
	rm -rf var/bench-answers && mkdir -p var/bench-answers
	env $(BENCH_ANSWERS_ENV) $(SERVICES) up neo4j redis \
		&& env $(BENCH_ANSWERS_ENV) $(PY) manage.py migrate -v 0 \
		&& env $(BENCH_ANSWERS_ENV) $(PY) benchmarks/answer_latency.py $(BENCH_ARGS); rc=$$?; \
		env $(BENCH_ANSWERS_ENV) $(SERVICES) down; exit $$rc

# Cost as the corpus grows (benchmarks/scale.py): one graph grown to 10k, 100k and 1M chunks, the question
# path, ingestion, memory and disk at each size; a private Neo4j (state under var/bench-scale, port 19687,
# 4 GiB heap and page cache), wiped first and stopped after, also on failure. About 14 minutes on 2 cores.
BENCH_SCALE_ENV := RAGKG_STATE_DIR=var/bench-scale DJANGO_DEBUG=1 DATABASE_URL= NEO4J_URI=bolt://127.0.0.1:19687 \
	NEO4J_PASSWORD=ragkg-bench-password NEO4J_HEAP=4g NEO4J_PAGE_CACHE=4g REDIS_URL=redis://127.0.0.1:19379/0 \
	WEB_PORT=19000 RAGKG_MANAGED_SERVICES=neo4j

bench-scale: setup
	rm -rf var/bench-scale && mkdir -p var/bench-scale
	env $(BENCH_SCALE_ENV) $(SERVICES) up neo4j
	env $(BENCH_SCALE_ENV) $(PY) manage.py migrate -v 0
	env $(BENCH_SCALE_ENV) $(PY) benchmarks/scale.py $(BENCH_ARGS); rc=$$?; env $(BENCH_SCALE_ENV) $(SERVICES) down; exit $$rc

# Multi-hop passage recall, dense against graph retrieval, on HotpotQA and MuSiQue (tuning) and 2Wiki dev300
# (validation): a private Neo4j
# (state under var/bench-multihop, port 57687, kept between runs so the corpora are ingested once).
BENCH_MULTIHOP_ENV := RAGKG_STATE_DIR=var/bench-multihop DJANGO_DEBUG=1 DATABASE_URL= \
	NEO4J_URI=bolt://127.0.0.1:57687 NEO4J_PASSWORD=ragkg-bench-password REDIS_URL=redis://127.0.0.1:56379/0 \
	WEB_PORT=58000 RAGKG_MANAGED_SERVICES=neo4j
# $(call bench_multihop_run,SCRIPT): SCRIPT with BENCH_ARGS against that Neo4j, stopped after, also on failure.
define bench_multihop_run
mkdir -p var/bench-multihop
env $(BENCH_MULTIHOP_ENV) $(SERVICES) up neo4j
env $(BENCH_MULTIHOP_ENV) $(PY) manage.py migrate -v 0
env $(BENCH_MULTIHOP_ENV) $(PY) $(1) $(BENCH_ARGS); rc=$$?; env $(BENCH_MULTIHOP_ENV) $(SERVICES) down; exit $$rc
endef

bench-multihop: setup
	$(call bench_multihop_run,benchmarks/multihop_recall.py)

# The learned ranker (apps/answers/ranker.py): features of the HotpotQA and MuSiQue tuning questions' candidate
# pools collected from the same private Neo4j, cross-validated, fitted and written to apps/answers/data/.
# BENCH_ARGS: --pool N, --hidden N, --ablations
train-reranker: setup
	$(call bench_multihop_run,benchmarks/train_reranker.py)

# Answer quality and speed of every offline generator (exact match, F1, time to first token, total with
# attribution) on the HotpotQA and MuSiQue samples and 2Wiki dev300, with gold passages and with the
# pipeline's retrieval; the same private Neo4j as bench-multihop (corpora ingested once, kept).
# BENCH_ARGS: --limit N, --models qwen2.5-0.5b,..., --retrieval gold|pipeline, --datasets ...
bench-answer-quality: setup
	$(call bench_multihop_run,benchmarks/answer_quality.py)

# "Not found in your documents": the retrieval thresholds fitted on HotpotQA and MuSiQue questions asked
# against their own and another dataset's collection, validated on 2Wiki dev300 (same private Neo4j).
bench-not-found: setup
	$(call bench_multihop_run,benchmarks/not_found.py)

# Token attribution: faithfulness on HotpotQA copy cases and supporting facts, cost of fast and exact
# mode, storage size (benchmarks/results/attribution_*.json); no services needed.
bench-attribution: setup
	mkdir -p var/bench-attribution
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-attribution DATABASE_URL= $(PY) manage.py migrate -v 0
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-attribution DATABASE_URL= $(PY) benchmarks/attribution_faithfulness.py $(BENCH_ARGS)
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-attribution DATABASE_URL= $(PY) benchmarks/attribution_storage.py

# The change log at 100k entries: append rate, tree head, proofs, offline verification (a throwaway SQLite).
bench-ledger: setup
	rm -rf var/bench-ledger && mkdir -p var/bench-ledger
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-ledger DATABASE_URL= $(PY) manage.py migrate -v 0
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-ledger DATABASE_URL= $(PY) benchmarks/ledger_scale.py $(BENCH_ARGS)

# Fit fast attribution's layer weights for the generator (apps/provenance/calibration/<model>.json).
attribution-calibrate: setup
	env DJANGO_DEBUG=1 $(PY) benchmarks/attribution_calibrate.py

# Retrieval quality of the offline models (cross-language XQuAD, text-to-image); no services needed.
bench-quality: setup
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-quality $(PY) benchmarks/retrieval_quality.py $(BENCH_ARGS)

# The question path's first stages part by part (language, NER, tokenizer, query embedding; no services).
bench-analysis: setup
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-encoders $(PY) benchmarks/question_analysis.py $(BENCH_ARGS)

# The text encoder options (torch, onnx, onnx-int8) side by side: speed and dense R@k on the multi-hop samples.
bench-encoders: setup
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-encoders $(PY) benchmarks/encoders.py $(BENCH_ARGS)

# Text encoders on XQuAD in English and Chinese (dense recall@k for zh->zh, en->zh, zh->en, en->en, and
# passages/s): MiniLM and multilingual-e5-small always; other encoders from local files with BENCH_ARGS
# (benchmarks/multilingual_encoders.py says how).
bench-encoders-multilingual: setup
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-encoders $(PY) benchmarks/multilingual_encoders.py $(BENCH_ARGS)

# The multilingual text space's cosines on the text space's scale (VECTORS_MTEXT_SCALE/_OFFSET), fitted on
# the tuning sets and checked on 2Wiki dev300 (benchmarks/space_scale.py).
bench-space-scale: setup
	env DJANGO_DEBUG=1 RAGKG_STATE_DIR=var/bench-encoders $(PY) benchmarks/space_scale.py $(BENCH_ARGS)

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	env $(LINT_ENV) $(VENV)/bin/mypy

format:
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The browser tests' Chromium (tests/browser): Debian's package, launched by Playwright from /usr/bin/chromium
# (`playwright install` cannot download here). Only the test setup installs it: `make run` needs no browser.
chromium:
	@[ -x /usr/bin/chromium ] || { echo "test setup: installing Chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup lint chromium
	$(PY) -m pytest

test-unit: setup
	$(PY) -m pytest -m "not integration"

# A realistic request mix (search page, retrieval-only and full asks, uploads, audit pages) at
# stepped open-loop rates: throughput, p50/p95/p99, shed 503s, failures and queue depths per step
# (benchmarks/load_mix.py). A private stack (state under var/bench-load, ports 29687/29379/29000,
# no chain), wiped first and stopped after, also on failure; the converted models are kept in
# var/bench-load-models between runs. BENCH_ARGS=--quick: a smoke run (two 15 s steps).
.PHONY: bench-load
BENCH_LOAD_ENV := RAGKG_STATE_DIR=var/bench-load DJANGO_DEBUG=0 DJANGO_SECRET_KEY=bench-load-throwaway \
	RAGKG_HTTPS=0 DATABASE_URL= NEO4J_URI=bolt://127.0.0.1:29687 NEO4J_PASSWORD=ragkg-bench-password \
	REDIS_URL=redis://127.0.0.1:29379/0 CELERY_BROKER_URL= CELERY_RESULT_BACKEND= WEB_HOST=127.0.0.1 \
	WEB_PORT=29000 CHAIN_RPC_URL=http://127.0.0.1:29545 LEDGER_ANCHOR_INTERVAL=0 \
	RAGKG_MODEL_CACHE_DIR=var/bench-load-models RAGKG_MANAGED_SERVICES=neo4j,redis,celery,web

bench-load: setup
	rm -rf var/bench-load && mkdir -p var/bench-load
	env $(BENCH_LOAD_ENV) $(SERVICES) up neo4j redis \
		&& env $(BENCH_LOAD_ENV) $(PY) manage.py migrate -v 0 \
		&& env $(BENCH_LOAD_ENV) $(SERVICES) up celery web \
		&& env $(BENCH_LOAD_ENV) $(PY) benchmarks/load_mix.py $(BENCH_ARGS); rc=$$?; \
		env $(BENCH_LOAD_ENV) $(SERVICES) down; exit $$rc

.PHONY: bench-warm
# Warm-up at start (benchmarks/warm_start.py): the first questions after a web or worker restart with
# RAGKG_WARM_UP on and off, side by side; a private stack under var/bench-warm, wiped first. About 10 minutes.
BENCH_WARM_ENV := RAGKG_STATE_DIR=var/bench-warm DJANGO_DEBUG=0 DJANGO_SECRET_KEY=bench-warm-throwaway \
	RAGKG_HTTPS=0 DATABASE_URL= NEO4J_URI=bolt://127.0.0.1:31687 NEO4J_PASSWORD=ragkg-bench-password \
	REDIS_URL=redis://127.0.0.1:31379/0 CELERY_BROKER_URL= CELERY_RESULT_BACKEND= WEB_HOST=127.0.0.1 \
	WEB_PORT=31000 CHAIN_RPC_URL=http://127.0.0.1:31545 LEDGER_ANCHOR_INTERVAL=0 \
	RAGKG_MODEL_CACHE_DIR=var/bench-load-models RAGKG_MANAGED_SERVICES=neo4j,redis,celery,web

bench-warm: setup
	rm -rf var/bench-warm && mkdir -p var/bench-warm
	env $(BENCH_WARM_ENV) $(SERVICES) up neo4j redis \
		&& env $(BENCH_WARM_ENV) $(PY) manage.py migrate -v 0 \
		&& env $(BENCH_WARM_ENV) $(SERVICES) up celery web \
		&& env $(BENCH_WARM_ENV) $(PY) benchmarks/warm_start.py $(BENCH_ARGS); rc=$$?; \
		env $(BENCH_WARM_ENV) $(SERVICES) down; exit $$rc
