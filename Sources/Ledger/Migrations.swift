/// The ledger's schema, as numbered migrations. Each runs once, in its own transaction, and is
/// recorded in `schema_migrations`; a database that has a migration this list lacks was migrated by
/// a newer binary, and `Migrator` refuses to touch it.
///
/// Never edit a migration that has shipped: add a new one.
enum Migrations {
    static let all: [Migration] = [
        Migration(version: 1, name: "ledger", sql: """
            -- One row per subscription (one original_transaction_id of one app). The columns are the
            -- latest analysed state, for queries and the scheduler; `state` holds the same state
            -- exactly as the analysis sees it, less the receipt (which lives in `receipts`).
            -- `version` makes concurrent writers compare-and-set.
            CREATE TABLE subscriptions (
                id                       bigserial PRIMARY KEY,
                app                      text NOT NULL DEFAULT 'default',
                original_transaction_id  text NOT NULL,
                account_id               text,
                environment              text NOT NULL DEFAULT 'Production'
                                         CHECK (environment IN ('Production', 'Sandbox')),
                status                   text NOT NULL DEFAULT 'unverified'
                                         CHECK (status IN ('unverified', 'active', 'in_grace', 'in_billing_retry',
                                                           'expired', 'refunded', 'invalid')),
                product_id               text,
                expires_at               timestamptz,
                auto_renew               boolean,
                auto_renew_product_id    text,
                expiration_intent        integer,
                grace_period_expires_at  timestamptz,
                is_trial                 boolean NOT NULL DEFAULT false,
                is_intro_offer           boolean NOT NULL DEFAULT false,
                ownership                text,
                chain_started_at         timestamptz,
                state                    jsonb,
                last_verified_at         timestamptz,
                last_outcome             text,
                -- NULL: checked only when a notification asks for it (refunded, invalid).
                next_check_at            timestamptz DEFAULT now(),
                version                  bigint NOT NULL DEFAULT 0,
                created_at               timestamptz NOT NULL DEFAULT now(),
                updated_at               timestamptz NOT NULL DEFAULT now(),
                UNIQUE (app, original_transaction_id)
            );
            -- The scheduler's due query walks this index in keyset order. Subscriptions that wait for
            -- a notification (refunded, invalid: next_check_at NULL) are left out of it.
            CREATE INDEX subscriptions_due ON subscriptions (next_check_at, id) WHERE next_check_at IS NOT NULL;
            CREATE INDEX subscriptions_account ON subscriptions (app, account_id) WHERE account_id IS NOT NULL;

            -- Receipts are credentials to a customer's purchase history: they live apart, so that
            -- roles which read subscriptions (analytics, support) need not be able to read them.
            CREATE TABLE receipts (
                subscription_id  bigint PRIMARY KEY REFERENCES subscriptions (id) ON DELETE CASCADE,
                receipt          text NOT NULL,
                updated_at       timestamptz NOT NULL DEFAULT now()
            );

            -- Every transaction Apple has shown for a subscription, once.
            CREATE TABLE transactions (
                transaction_id           text PRIMARY KEY,
                subscription_id          bigint NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
                original_transaction_id  text NOT NULL,
                product_id               text,
                purchased_at             timestamptz,
                expires_at               timestamptz,
                cancelled_at             timestamptz,
                cancellation_reason      integer,
                is_trial                 boolean,
                is_intro_offer           boolean,
                is_upgraded              boolean,
                web_order_line_item_id   text,
                ownership                text,
                offer_code_ref_name      text,
                created_at               timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX transactions_subscription ON transactions (subscription_id, purchased_at);

            -- One row per verifyReceipt attempt. Never the receipt, never the shared secret.
            CREATE TABLE verifications (
                id               bigserial PRIMARY KEY,
                subscription_id  bigint NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
                run_id           text,
                attempted_at     timestamptz NOT NULL DEFAULT now(),
                environment      text,
                apple_status     integer,
                http_status      integer,
                outcome          text NOT NULL,
                latency_ms       integer,
                error            text
            );
            CREATE INDEX verifications_subscription ON verifications (subscription_id, attempted_at);
            -- The status command reads the last minute of attempts across the fleet.
            CREATE INDEX verifications_recent ON verifications (attempted_at);

            -- The transactional outbox. Written in the same transaction as the state it announces;
            -- the relay publishes rows in `seq` order and stamps published_at.
            CREATE TABLE events (
                id                       uuid PRIMARY KEY,
                seq                      bigserial UNIQUE,
                subscription_id          bigint NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
                original_transaction_id  text NOT NULL,
                type                     text NOT NULL,
                payload                  jsonb NOT NULL,
                occurred_at              timestamptz NOT NULL,
                created_at               timestamptz NOT NULL DEFAULT now(),
                published_at             timestamptz
            );
            CREATE INDEX events_unpublished ON events (seq) WHERE published_at IS NULL;
            CREATE INDEX events_subscription ON events (subscription_id, seq);

            -- Downstream HTTP receivers. `secret` signs deliveries (Standard Webhooks).
            CREATE TABLE webhook_endpoints (
                id               bigserial PRIMARY KEY,
                url              text NOT NULL,
                secret           text NOT NULL,
                event_types      text[] NOT NULL DEFAULT '{}',
                enabled          boolean NOT NULL DEFAULT true,
                disabled_reason  text,
                created_at       timestamptz NOT NULL DEFAULT now()
            );

            -- One row per (endpoint, event); attempts counts tries so far.
            CREATE TABLE webhook_deliveries (
                id               bigserial PRIMARY KEY,
                endpoint_id      bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
                event_id         uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
                state            text NOT NULL DEFAULT 'pending'
                                 CHECK (state IN ('pending', 'delivered', 'failed')),
                attempts         integer NOT NULL DEFAULT 0,
                next_attempt_at  timestamptz NOT NULL DEFAULT now(),
                last_status      integer,
                last_error       text,
                delivered_at     timestamptz,
                created_at       timestamptz NOT NULL DEFAULT now(),
                UNIQUE (endpoint_id, event_id)
            );
            CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

            -- One row per webhook attempt, for support and the dashboards.
            CREATE TABLE webhook_attempts (
                id               bigserial PRIMARY KEY,
                delivery_id      bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
                attempted_at     timestamptz NOT NULL DEFAULT now(),
                response_status  integer,
                error            text,
                latency_ms       integer
            );
            """),
        Migration(version: 2, name: "relay", sql: """
            -- Wakes the outbox relays as soon as events are committed: they LISTEN on this channel
            -- (and still poll, since a notification sent while a relay reconnects is lost). One
            -- notification per statement, delivered at commit; PostgreSQL folds repeats in one transaction.
            CREATE FUNCTION notify_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('receiptfleet_events', '');
                RETURN NULL;
            END
            $$;
            CREATE TRIGGER events_inserted AFTER INSERT ON events
                FOR EACH STATEMENT EXECUTE FUNCTION notify_events_inserted();

            -- The relay publishes a subscription's event only when no earlier one of it is pending:
            -- this finds the earliest pending event of each subscription without walking its history.
            CREATE INDEX events_unpublished_subscription ON events (subscription_id, seq)
                WHERE published_at IS NULL;

            -- Attempts are read per delivery (support, dashboards) and deleted with it.
            CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at);
            """),
        Migration(version: 3, name: "api", sql: """
            -- App Store Server Notifications, one row per notification Apple sent (it re-sends until it
            -- gets a 200, so the same one may arrive many times). `dedupe_key` is V2's notificationUUID
            -- ('v2:…') or a hash of a V1 body ('v1:sha256:…'). Never the body itself: a V1 body holds the
            -- shared secret and a receipt.
            CREATE TABLE notifications (
                id                       bigserial PRIMARY KEY,
                dedupe_key               text NOT NULL UNIQUE,
                version                  smallint NOT NULL CHECK (version IN (1, 2)),
                notification_type        text NOT NULL,
                subtype                  text,
                environment              text,
                original_transaction_id  text,
                subscription_id          bigint REFERENCES subscriptions (id) ON DELETE SET NULL,
                -- queued: a high-priority verification job was (or is being) enqueued for the subscription;
                -- the others are acknowledged and kept for support, with nothing to do.
                outcome                  text NOT NULL
                                         CHECK (outcome IN ('queued', 'ignored_environment', 'unknown_subscription',
                                                            'no_subscription')),
                received_at              timestamptz NOT NULL DEFAULT now(),
                -- Set just before the job is enqueued (and cleared if that fails), so a re-sent copy
                -- enqueues nothing more, while a copy of one whose enqueue failed tries again.
                job_enqueued_at          timestamptz
            );
            CREATE INDEX notifications_subscription ON notifications (subscription_id, received_at);

            -- Subscriptions are linked to the app's own accounts by subscriptions.account_id (migration 1),
            -- set once by the first registration that names an account.
            """),
        Migration(version: 4, name: "notification meanings", sql: """
            -- What Apple says the notification's type means, for support reading the table: 'unknown'
            -- for a type the recording version did not know; NULL on rows recorded before this migration.
            ALTER TABLE notifications ADD COLUMN meaning text;
            """),
        Migration(version: 5, name: "judgement times", sql: """
            -- The moment Apple judged the receipt (its request_date; the state's verified_at) for attempts
            -- that wrote a state. attempted_at is the fleet's clock, seconds later under load; this is the
            -- time the stored state is true at. NULL for attempts that changed nothing.
            ALTER TABLE verifications ADD COLUMN judged_at timestamptz;
            """),
        Migration(version: 6, name: "purchases", sql: """
            -- One-time purchases (non-consumables such as a lifetime unlock, non-renewing subscriptions),
            -- one row per transaction of an app. They have no renewal chain and no subscription state:
            -- owned until Apple refunds them. The account link is set once, like subscriptions.account_id.
            CREATE TABLE purchases (
                id                       bigserial PRIMARY KEY,
                app                      text NOT NULL DEFAULT 'default',
                transaction_id           text NOT NULL,
                original_transaction_id  text NOT NULL,
                account_id               text,
                product_id               text,
                quantity                 integer,
                ownership                text,
                environment              text NOT NULL DEFAULT 'Production'
                                         CHECK (environment IN ('Production', 'Sandbox')),
                status                   text NOT NULL CHECK (status IN ('owned', 'refunded')),
                purchased_at             timestamptz,
                cancelled_at             timestamptz,
                cancellation_reason      integer,
                last_verified_at         timestamptz NOT NULL DEFAULT now(),
                created_at               timestamptz NOT NULL DEFAULT now(),
                updated_at               timestamptz NOT NULL DEFAULT now(),
                UNIQUE (app, transaction_id)
            );
            CREATE INDEX purchases_account ON purchases (app, account_id) WHERE account_id IS NOT NULL;

            -- An event is about a subscription or about a purchase, never both: the outbox keeps each
            -- one's events in order by whichever id it has.
            ALTER TABLE events ALTER COLUMN subscription_id DROP NOT NULL;
            ALTER TABLE events ADD COLUMN purchase_id bigint REFERENCES purchases (id) ON DELETE CASCADE;
            ALTER TABLE events ADD CONSTRAINT events_one_subject CHECK ((subscription_id IS NULL) <> (purchase_id IS NULL));
            CREATE INDEX events_unpublished_purchase ON events (purchase_id, seq)
                WHERE published_at IS NULL AND purchase_id IS NOT NULL;
            """),
        Migration(version: 7, name: "account claims", sql: """
            -- A registration Apple could not be asked about claims a subscription for an account. The
            -- claim links nothing until Apple's answer for that very receipt (known by its SHA-256,
            -- never kept) shows the subscription; until then the account sees it as pending.
            CREATE TABLE account_claims (
                id               bigserial PRIMARY KEY,
                subscription_id  bigint NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
                account_id       text NOT NULL,
                receipt_sha256   text NOT NULL,
                claimed_at       timestamptz NOT NULL DEFAULT now(),
                resolved_at      timestamptz,
                UNIQUE (subscription_id, account_id, receipt_sha256)
            );
            CREATE INDEX account_claims_pending ON account_claims (account_id) WHERE resolved_at IS NULL;
            """),
        Migration(version: 8, name: "webhook leases", sql: """
            -- A webhook dispatcher claims a delivery in one short transaction and records the answer in
            -- another, holding no transaction while the receiver thinks. Until `leased_until` the
            -- delivery is in flight: no one else claims it, and it counts against its endpoint's cap
            -- of concurrent requests. A dispatcher that dies mid-request leaves it due again after that.
            ALTER TABLE webhook_deliveries ADD COLUMN leased_until timestamptz;

            -- Claims look at one endpoint at a time: its most overdue delivery, and those in flight.
            CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at)
                WHERE state = 'pending';
            """),
        Migration(version: 9, name: "notification recovery", sql: """
            -- The scheduler looks for recent notifications whose subscription has not been verified since
            -- (their job was lost with Redis, or never enqueued): only queued ones, only the last few days.
            CREATE INDEX notifications_queued_received ON notifications (received_at) WHERE outcome = 'queued';
            """),
        Migration(version: 10, name: "webhook secrets sealed", sql: """
            -- Webhook secrets are stored encrypted (AES-256-GCM, docs/webhooks.md): `secret_sealed` is the
            -- nonce, ciphertext and tag, `secret_key_id` names the key it opens with. The key lives in the
            -- fleet's configuration, never here, so this migration cannot encrypt the secrets already stored:
            -- they stay in `secret` until `receiptfleet webhooks rotate-key` seals them and clears it.
            ALTER TABLE webhook_endpoints ALTER COLUMN secret DROP NOT NULL;
            ALTER TABLE webhook_endpoints ADD COLUMN secret_key_id text;
            ALTER TABLE webhook_endpoints ADD COLUMN secret_sealed bytea;
            ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_one_secret CHECK (
                (secret_key_id IS NULL) = (secret_sealed IS NULL) AND (secret IS NULL) = (secret_sealed IS NOT NULL));
            """),
        Migration(version: 11, name: "verification backend", sql: """
            -- Which of Apple's services verifies a subscription: verifyReceipt (its stored receipt) or the App
            -- Store Server API (its original transaction id). NULL follows the deployment's `backend` setting;
            -- `receiptfleet subscriptions set-backend` names one, and a StoreKit 2 registration, which has no
            -- receipt, names the Server API.
            ALTER TABLE subscriptions ADD COLUMN backend text CHECK (backend IN ('verify_receipt', 'server_api'));
            -- The backend that answered each attempt (NULL for attempts older than this column).
            ALTER TABLE verifications ADD COLUMN backend text;
            """),
        Migration(version: 12, name: "audit trail", sql: """
            -- Every operator action (pause, resume, dead letters, webhooks, backend moves, …), from the
            -- command line, the API or the console: who, when, what, on what, and how it ended. Never
            -- pruned with the rest of the data.
            CREATE TABLE audit_log (
                id        bigserial PRIMARY KEY,
                at        timestamptz NOT NULL DEFAULT now(),
                actor     text NOT NULL,
                via       text NOT NULL CHECK (via IN ('cli', 'api', 'console')),
                action    text NOT NULL,
                target    text,
                details   jsonb NOT NULL DEFAULT '{}',
                outcome   text NOT NULL
            );
            CREATE INDEX audit_log_at ON audit_log (at);
            """),
        Migration(version: 13, name: "forgetting and retention", sql: """
            -- A forgotten subscription or purchase (`Ledger.forget`) leaves one event behind, its tombstone,
            -- which names the deleted row's id for consumers to delete their copies by: events outlive
            -- their subject, so they no longer reference it. Nothing else deletes subscriptions or
            -- purchases, and `forget` deletes their other events itself.
            ALTER TABLE events DROP CONSTRAINT events_subscription_id_fkey;
            ALTER TABLE events DROP CONSTRAINT events_purchase_id_fkey;
            -- Deleting an event (forget, retention) deletes its deliveries: without this index each
            -- deleted event would read the whole deliveries table.
            CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
            """),
        Migration(version: 14, name: "webhook signing secret rotation", sql: """
            -- `webhooks rotate-secret` gives an endpoint a new signing secret and keeps the previous one,
            -- sealed like it, until `previous_secret_until`: until then each delivery carries a signature
            -- by each (Standard Webhooks lists several), so the receiver can switch whenever it likes.
            ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_key_id text;
            ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_sealed bytea;
            ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_until timestamptz;
            """),
        Migration(version: 15, name: "queued registrations keep their receipts", sql: """
            -- A registration queued while Apple cannot be asked keeps its own receipt in its claim, with or
            -- without an account, until a worker has Apple judge that receipt alone: proven, it becomes the
            -- subscription's; refuted (junk, or another subscription's), it is dropped and nothing else
            -- changes. A stranger's junk naming the subscription can then no longer replace the owner's
            -- receipt nor turn the subscription invalid. Claims from before keep only their digest and are
            -- proven as before, when the subscription's own receipt verifies.
            ALTER TABLE account_claims ALTER COLUMN account_id DROP NOT NULL;
            ALTER TABLE account_claims ADD COLUMN receipt text;
            -- Calls that could not judge it (21002 is retried, as for any receipt): the least tried goes first.
            ALTER TABLE account_claims ADD COLUMN attempts integer NOT NULL DEFAULT 0;
            ALTER TABLE account_claims ADD COLUMN refuted text;
            ALTER TABLE account_claims DROP CONSTRAINT account_claims_subscription_id_account_id_receipt_sha256_key;
            ALTER TABLE account_claims ADD CONSTRAINT account_claims_once
                UNIQUE NULLS NOT DISTINCT (subscription_id, account_id, receipt_sha256);
            CREATE INDEX account_claims_unjudged ON account_claims (subscription_id)
                WHERE resolved_at IS NULL AND receipt IS NOT NULL;
            """),
        Migration(version: 16, name: "the audit trail by action", sql: """
            -- `status`, the console and every metrics scrape read the last run of an action (the daily
            -- `notifications recover`): one index step instead of a walk of the whole trail.
            CREATE INDEX audit_log_action ON audit_log (action, id);
            """),
        Migration(version: 17, name: "scheduler runs", sql: """
            -- One row per scheduler run, for the console's table of past runs: what the scheduler found
            -- and enqueued (its passes added up), then, as its jobs settle, how many were verified or
            -- died and when the last one was settled, from the run's tally in Redis (which expires
            -- after 8 days); with the Apple calls and events of the fleet while it ran. Pruned with
            -- the verifications.
            CREATE TABLE scheduler_runs (
                id              bigserial PRIMARY KEY,
                run_id          text NOT NULL UNIQUE,
                started_at      timestamptz NOT NULL,
                due             integer NOT NULL DEFAULT 0,
                enqueued        integer NOT NULL DEFAULT 0,
                verified        integer NOT NULL DEFAULT 0,
                dead            integer NOT NULL DEFAULT 0,
                last_settled_at timestamptz,
                finished_at     timestamptz,
                apple_calls     integer NOT NULL DEFAULT 0,
                events          integer NOT NULL DEFAULT 0
            );
            CREATE INDEX scheduler_runs_unfinished ON scheduler_runs (started_at) WHERE finished_at IS NULL;
            """),
        Migration(version: 18, name: "renewal-date extensions", sql: """
            -- Each renewal-date extension Apple was asked for, one row per subscription: by
            -- `subscriptions extend` (one subscription, or with `product_id` every active subscriber of
            -- the product the ledger knows, asked of Apple as one request). Apple allows two within 365
            -- days; the rows granted count toward it. A row still `asked` (no answer came) is
            -- asked again with its `request_identifier`, which Apple applies once however often it hears it.
            CREATE TABLE renewal_extensions (
                id                  bigserial PRIMARY KEY,
                subscription_id     bigint NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
                request_identifier  text NOT NULL CHECK (length(request_identifier) BETWEEN 1 AND 128),
                product_id          text,
                days                integer NOT NULL CHECK (days BETWEEN 1 AND 90),
                reason              integer NOT NULL CHECK (reason BETWEEN 0 AND 3),
                requested_at        timestamptz NOT NULL DEFAULT now(),
                state               text NOT NULL DEFAULT 'asked' CHECK (state IN ('asked', 'extended', 'refused')),
                -- Apple's effectiveDate: the period's new end.
                expires_at          timestamptz,
                refusal             text,
                UNIQUE (subscription_id, request_identifier)
            );
            CREATE INDEX renewal_extensions_request ON renewal_extensions (request_identifier);
            """),
        Migration(version: 19, name: "consumption requests", sql: """
            -- Whether an app's account consented to share consumption data with Apple when its customer
            -- asks for a refund (the API's PUT/DELETE /v1/accounts/{id}/refund-consent). Without a row,
            -- or with `consented` false (withdrawn), nothing is sent.
            CREATE TABLE refund_consents (
                app          text NOT NULL,
                account_id   text NOT NULL,
                consented    boolean NOT NULL,
                changed_at   timestamptz NOT NULL DEFAULT now(),
                changed_by   text,
                PRIMARY KEY (app, account_id)
            );

            -- Each CONSUMPTION_REQUEST notification (a customer asked Apple for a refund), once by its
            -- notification's dedupe key, and what became of it: `pending` until answered (Send
            -- Consumption Information) before `deadline` (Apple's 12 hours from `signed_at`);
            -- `unanswered` with the reason (no consent, Family Sharing, Apple's refusal); `missed` when
            -- the deadline passed first (a request found late by notification recovery is never sent).
            CREATE TABLE consumption_requests (
                id                       bigserial PRIMARY KEY,
                dedupe_key               text NOT NULL UNIQUE,
                app                      text NOT NULL,
                environment              text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
                transaction_id           text NOT NULL,
                original_transaction_id  text,
                subscription_id          bigint REFERENCES subscriptions (id) ON DELETE CASCADE,
                -- Apple's `type` of the transaction and its `inAppOwnershipType`, as the notification signed them.
                product_type             text,
                family_shared            boolean NOT NULL DEFAULT false,
                request_reason           text,
                signed_at                timestamptz NOT NULL,
                deadline                 timestamptz NOT NULL,
                received_at              timestamptz NOT NULL DEFAULT now(),
                state                    text NOT NULL DEFAULT 'pending'
                                         CHECK (state IN ('pending', 'answered', 'unanswered', 'missed')),
                unanswered_reason        text,
                -- The ConsumptionRequest body Apple took.
                answer                   jsonb,
                answered_at              timestamptz,
                attempts                 integer NOT NULL DEFAULT 0,
                next_attempt_at          timestamptz NOT NULL DEFAULT now(),
                last_error               text
            );
            -- The responder's claims, its sweep of missed requests and the nearing-deadline gauge read the pending ones by deadline.
            CREATE INDEX consumption_requests_due ON consumption_requests (deadline) WHERE state = 'pending';
            CREATE INDEX consumption_requests_subscription ON consumption_requests (subscription_id, signed_at);
            """),
        Migration(version: 20, name: "notifications settled by their signed data, and their health", sql: """
            -- settled: the notification's signed data told the whole change and was applied; no job was due.
            ALTER TABLE notifications DROP CONSTRAINT notifications_outcome_check;
            ALTER TABLE notifications ADD CONSTRAINT notifications_outcome_check
                CHECK (outcome IN ('queued', 'settled', 'ignored_environment', 'unknown_subscription', 'no_subscription'));
            -- The scheduler weighs each app's last day of notifications against its last day of changes.
            CREATE INDEX notifications_received ON notifications (received_at);
            CREATE INDEX events_created ON events (created_at);
            """),
        Migration(version: 21, name: "notification freshness", sql: """
            -- signed_at: Apple's signedDate (V2), from which the fleet's freshness is measured: how long
            -- after Apple signed a change the fleet knew it. recovered: brought in from Apple's history by
            -- `notifications recover`, not sent to serve; many of them mean Apple's sends do not arrive.
            ALTER TABLE notifications ADD COLUMN signed_at timestamptz;
            ALTER TABLE notifications ADD COLUMN recovered boolean NOT NULL DEFAULT false;
            """),
        Migration(version: 22, name: "scheduler passes by night", sql: """
            -- Each scheduler pass a row of its own (run_id: the pass's id, `night/N`, which its jobs
            -- and its tally in Redis carry), grouped by its night: the UTC date, or the run an operator
            -- named. A night keeps the fleet's Apple calls and events over its passes' whole span, as
            -- counted up to `counted_to`: its passes may overlap, so theirs do not add up. A run
            -- recorded before is a night of one pass, with its figures. Pruned by night, passes with it.
            CREATE TABLE scheduler_nights (
                id          bigserial PRIMARY KEY,
                night       text NOT NULL UNIQUE,
                started_at  timestamptz NOT NULL,
                apple_calls integer NOT NULL DEFAULT 0,
                events      integer NOT NULL DEFAULT 0,
                counted_to  timestamptz
            );
            INSERT INTO scheduler_nights (night, started_at, apple_calls, events, counted_to)
                SELECT run_id, started_at, apple_calls, events, last_settled_at FROM scheduler_runs ORDER BY id;
            ALTER TABLE scheduler_runs RENAME TO scheduler_passes;
            -- Passes are read by start (the last 8 days', finished or not: a replay reopens one).
            DROP INDEX scheduler_runs_unfinished;
            CREATE INDEX scheduler_passes_started ON scheduler_passes (started_at);
            ALTER TABLE scheduler_passes
                ADD COLUMN night text REFERENCES scheduler_nights (night) ON DELETE CASCADE,
                ADD COLUMN pass integer,
                ADD COLUMN replayed integer NOT NULL DEFAULT 0;
            UPDATE scheduler_passes SET night = run_id, pass = 1;
            ALTER TABLE scheduler_passes ALTER COLUMN night SET NOT NULL, ALTER COLUMN pass SET NOT NULL,
                ADD CONSTRAINT scheduler_passes_night_pass UNIQUE (night, pass);
            """),
    ]
}