import { createHmac, randomBytes } from 'node:crypto';
import Joi from './joi';
import {
  CDN_BASE_URL_MAX,
  HOSTED_URL_MAX,
  LONGEST_NEW_FILE_KEY,
  hostedUrl,
  hostsEveryNewKey,
  parseHostedUrl,
} from './contracts/file';
import { parseRange } from './outbound-url';

/** Names of every service this codebase can run; `SERVICES` picks a subset. */
export const SERVICE_NAMES = [
  'gateway',
  'account',
  'geo',
  'pricing',
  'package',
  'file',
  'payment',
  'order',
  'courier-matching',
  'webhook',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export const APP_ENVIRONMENTS = ['staging', 'live'] as const;
export type AppEnvironment = (typeof APP_ENVIRONMENTS)[number];

/**
 * REDIS_COMMAND_TIMEOUT_MS's default. A command of ours takes well under a millisecond, but the
 * timer runs on the process's event loop: a loop held longer than the limit (a service loading
 * its data at start, a long collection) fires it before the answer, already arrived, is read.
 * 1 s made such pauses 503s under load; 5 s keeps them apart from a Redis that stalls.
 */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 5_000;

/**
 * File types the file service recognises from their bytes (services/file/sniff.ts);
 * FILE_ALLOWED_TYPES picks from these.
 */
export const SNIFFABLE_TYPES = [
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/heic',
  'image/heif',
  'application/pdf',
] as const;
export type SniffableType = (typeof SNIFFABLE_TYPES)[number];

export interface Config {
  port: number;
  host: string;
  appEnv: AppEnvironment;
  apiKeyPrefix: string;
  adminToken: string | undefined;
  mongoUrl: string;
  mongoDbPrefix: string;
  mongoTimeoutMs: number;
  /** Count every database command in `waybill_db_commands_total` (for measuring). */
  dbCommandMetrics: boolean;
  natsUrl: string | undefined;
  namespace: string;
  nodeId: string | undefined;
  redisUrl: string;
  /** How long a Redis command may wait for its answer (503 after it): libs/redis. */
  redisCommandTimeoutMs: number;
  s3: {
    endpoint: string;
    region: string;
    bucket: string;
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    timeoutMs: number;
  };
  cdnBaseUrl: string;
  /** Saved packages a user may hold that no delivery has taken. */
  packageMaxOpen: number;
  files: {
    maxBytes: number;
    allowedTypes: SniffableType[];
    timeoutMs: number;
    /** Uploads one file-service process receives at once (503 beyond). */
    maxUploads: number;
    /** Uploads one API key may have in progress across every replica (429 beyond). */
    maxUploadsPerKey: number;
    /** Uploads one account may have in progress across its server keys, and as many across its publishable keys (429 beyond). */
    maxUploadsPerUser: number;
    /** Bytes of files one user may store in a UTC day (429 beyond); 0: no limit. */
    maxUploadBytesPerUserPerDay: number;
    /** Downloads one file-service process streams at once (503 beyond), its S3 pool's size. */
    maxDownloads: number;
    /** Downloads one API key may have in progress across every replica (429 beyond). */
    maxDownloadsPerKey: number;
    /** Downloads one account may have in progress across its server keys, and as many across its publishable keys (429 beyond). */
    maxDownloadsPerUser: number;
    /** How long an upload's body may send nothing before it is aborted (408). */
    idleTimeoutMs: number;
    /** What an upload must average over each idle window, unless the file service is behind. */
    minUploadBytesPerSecond: number;
    /** A multipart upload begun longer ago than this is a dead process's: it is aborted. */
    staleUploadMs: number;
    /** How often a file-service replica aborts the stale ones. */
    uploadSweepIntervalMs: number;
    /** Internal port of the file service for bodies from gateways on other nodes (0: any free). */
    transferPort: number;
    /** Address gateways reach that port at; unset: HOST when it names one, else this node's IP. */
    transferHost: string | undefined;
  };
  services: ServiceName[];
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  logFormat: 'json' | 'pretty';
  quota: { limit: number; windowSeconds: number };
  /** Requests allowed per courier per window (`/courier`, whichever of its tokens). */
  courierQuota: { limit: number; windowSeconds: number };
  /** Failed authentications allowed per client address per window (gateway/auth-throttle). */
  authFailures: { limit: number; windowSeconds: number };
  /** Requests of the public pages (tracking, checkout) per client address per window. */
  pageRequests: { limit: number; windowSeconds: number };
  /** Proxies in front of the gateway whose `X-Forwarded-For` entries are believed. */
  trustProxyHops: number;
  apiKeyCacheSeconds: number;
  /** How long a gateway caches a courier token's lookup. */
  courierTokenCacheSeconds: number;
  /** Couriers' hot positions in Redis (courier-matching, docs/couriers.md). */
  courierPositions: {
    /** A courier whose last report is older is offline: never found by a search. */
    onlineMs: number;
    /** How often positions that moved are written to MongoDB. */
    flushMs: number;
  };
  /** The public tracking page's live updates, per gateway process (gateway/tracking-stream). */
  tracking: {
    /** How often the courier's position is read again while they are under way. */
    refreshMs: number;
    /** How often an idle stream gets a comment, so that proxies keep it open. */
    heartbeatMs: number;
    /** Streams one gateway process holds open at once (503 beyond). */
    maxStreams: number;
    /** Streams one client address may hold open on one gateway process (429 beyond). */
    maxStreamsPerAddress: number;
    /** The longest a stream stays open; the page's EventSource then reconnects. */
    streamLifetimeMs: number;
  };
  bodyLimit: string;
  requestTimeoutMs: number;
  /** How long the gateway's HTTP server keeps an idle connection (Node's `keepAliveTimeout`). */
  httpKeepAliveMs: number;
  /** How long a stop may take once SIGTERM came; the process exits 1 after it (libs/resilience). */
  stopGraceMs: number;
  /** After how long a node passes again over what was stored without our records (libs/backfills). */
  backfillAfterRolloutMs: number;
  /**
   * Whether the services run their background work (sweeps, senders, flushers, the simulator,
   * retention). Not read from the environment: false only in the operator CLI's short-lived
   * broker, whose services must not act on the platform's data behind the command's back.
   */
  background: boolean;
  opsPort: number;
  routing: {
    osrmUrl: string | undefined;
    osrmProfile: string;
    osrmTimeoutMs: number;
    osrmFailureThreshold: number;
    osrmCoolDownMs: number;
    osrmMaxAnswerBytes: number;
    circuity: number;
  };
  /** Mode A quotes' ids (services/pricing/quote-token, decision 142). */
  quotes: {
    /** Key of the ids' HMAC: a request names a quote only this platform made. */
    secret: string;
    /** How long a quote holds its price for a request that names it. */
    ttlMs: number;
  };
  geocoder: {
    url: string | undefined;
    timeoutMs: number;
    countryCodes: string | undefined;
    failureThreshold: number;
    coolDownMs: number;
    maxAnswerBytes: number;
    cacheMs: number;
    cacheEntries: number;
  };
  payment: {
    /** Where hosted checkouts are paid: our own sandbox page, or a Paystack-compatible provider. */
    provider: PaymentProviderName;
    /** The gateway's public URL, for links we hand out (the sandbox checkout page). */
    publicBaseUrl: string;
    paystack: { baseUrl: string; secretKey: string | undefined; timeoutMs: number };
    /** How long a checkout may wait for its payer before it expires. */
    checkoutTtlMs: number;
    /** How often expired checkouts are closed and unacknowledged outcomes sent again. */
    sweepIntervalMs: number;
    /** How long an outcome may go unacknowledged before the sweep sends it again. */
    eventRetryMs: number;
    /**
     * How long after a provider's checkout expired the provider is asked again whether it was
     * paid after all, once at each (increasing).
     */
    lateChecksMs: number[];
  };
  order: {
    /** How often requests stopped half-way and unsettled transitions are swept. */
    sweepIntervalMs: number;
    /** How long a request may stay under way before the sweep finishes or undoes it. */
    staleRequestMs: number;
    /** Key of the proof codes' HMAC at rest. */
    proofCodeSecret: string;
    /** Tests only: where to stop the process in the middle of a request. */
    fault: OrderFaultPoint | undefined;
    /**
     * How long before a SCHEDULED delivery must leave for its slot (the slot's start less the
     * trip) the search for its courier starts.
     */
    scheduledSearchLeadMs: number;
  };
  /** Messages to people (the order service's outbox): SMS and e-mail, docs/deliveries.md. */
  notifications: {
    /** The gateway's public URL: the tracking link is `<publicBaseUrl>/track/<trackingId>`. */
    publicBaseUrl: string;
    /** Unset: e-mails go to the log sink (staging only). */
    smtpUrl: string | undefined;
    /**
     * An `smtp://` server must upgrade the connection to TLS (STARTTLS) before the login and
     * the mail (live): one that does not, or a connection whose upgrade was stripped on the
     * way, would carry the password and people's codes in clear.
     */
    smtpRequireTls: boolean;
    mailFrom: string;
    sms: {
      provider: SmsProviderName;
      termii: {
        baseUrl: string;
        apiKey: string | undefined;
        senderId: string | undefined;
        channel: TermiiChannel;
      };
    };
    /** How often the outbox is read for messages due. */
    intervalMs: number;
    /** People sent to at once, each person's messages in order; the SMTP connections kept. */
    concurrency: number;
    /** Time limit of one send to the SMTP server or the SMS provider. */
    timeoutMs: number;
    /** Attempts a message gets, and the growing wait between two. */
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  };
  matching: {
    offerTimeoutMs: number;
    searchTimeoutMs: number;
    /** How long a courier who declined or missed an offer is not asked again for the delivery. */
    reaskAfterMs: number;
    /** Radius of the first round, what each round adds, the most, and how long a round is. */
    reach: { startKm: number; stepKm: number; maxKm: number; widenEveryMs: number };
    /** How often running searches are stepped (expired offers closed, the radius widened). */
    sweepIntervalMs: number;
    /** The longest wait between two steps of a search that finds nobody in reach. */
    idleStepMaxMs: number;
    /** How much faster than real time the sandbox's simulated deliveries run. */
    simulatorTimeScale: number;
    /** The cash a courier may owe with a pay-on-delivery offered to them, in kobo (0: any). */
    cashLimitKobo: number;
  };
  webhook: {
    /** Key sealing the endpoints' signing secrets at rest (AES-256-GCM): they must be read to sign. */
    secretKey: string;
    /** Staging and tests: private and loopback targets accepted (never link-local or metadata). */
    allowPrivateTargets: boolean;
    /** WEBHOOK_DENY_CIDRS: public addresses and ranges never called. */
    deniedTargets: string[];
    maxEndpoints: number;
    timeoutMs: number;
    /** How long a message is retried after its first attempt before it is given up. */
    retryWindowMs: number;
    /** An endpoint that has failed every attempt for this long is disabled. */
    disableAfterMs: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    dispatchIntervalMs: number;
    /** Messages in flight at once, per dispatcher. */
    concurrency: number;
    /** How long a finished message, its attempts and its event are kept (decision 126). */
    retentionMs: number;
    /** How often each replica's retention sweep runs a round. */
    retentionIntervalMs: number;
  };
}

/**
 * Where a test may stop the order process in the middle of a request (ORDER_FAULT), in the
 * order a request passes them; a checkout-paid request has no debit, so passes neither
 * `before-debit` nor `before-ready`.
 */
export const ORDER_FAULT_POINTS = [
  'after-claim',
  'after-packages',
  'before-debit',
  'before-ready',
  'after-ready',
  'after-outcome',
] as const;
export type OrderFaultPoint = (typeof ORDER_FAULT_POINTS)[number];

/**
 * docker-compose.yml's ADMIN_TOKEN when none is set, for a machine's own use: anyone can read
 * it in the repository, so live refuses it.
 */
export const COMPOSE_ADMIN_TOKEN = 'change-me-admin-token';

/**
 * The Secret's keys (deploy/k8s/secret.example.yaml) and the services that read each. A pod is
 * given the keys of its own SERVICES only (deploy/k8s), and live requires a key only of a
 * process that runs one of its readers: a geo pod broken into holds no payment key, and the
 * pricing pod not the proof codes' (decision 153).
 */
export const SECRET_READERS = {
  ADMIN_TOKEN: ['gateway'],
  MONGO_URL: [
    'account',
    'geo',
    'pricing',
    'package',
    'payment',
    'order',
    'courier-matching',
    'webhook',
  ],
  REDIS_URL: ['gateway', 'file', 'order', 'courier-matching'],
  S3_ACCESS_KEY_ID: ['file'],
  S3_SECRET_ACCESS_KEY: ['file'],
  PAYSTACK_SECRET_KEY: ['payment'],
  SMTP_URL: ['order', 'webhook'],
  TERMII_API_KEY: ['order', 'webhook'],
  PROOF_CODE_SECRET: ['order'],
  QUOTE_SECRET: ['pricing'],
  WEBHOOK_SECRET_KEY: ['webhook'],
} as const satisfies Record<string, readonly ServiceName[]>;
export type SecretName = keyof typeof SECRET_READERS;

/** The Secret's keys a process running `services` reads. */
export function secretsOf(services: readonly ServiceName[]): SecretName[] {
  return (Object.keys(SECRET_READERS) as SecretName[]).filter((name) =>
    SECRET_READERS[name].some((reader) => services.includes(reader)),
  );
}

/** Staging's proof-code key when none is set: staging shows codes to support anyway. */
const STAGING_PROOF_CODE_SECRET = 'waybill-staging-proof-code-secret';
const STAGING_WEBHOOK_SECRET_KEY = 'waybill-staging-webhook-secret-key';

export const PAYMENT_PROVIDERS = ['sandbox', 'paystack'] as const;
export type PaymentProviderName = (typeof PAYMENT_PROVIDERS)[number];

/**
 * Termii's routes for an SMS: `dnd`, its transactional route (codes and links: delivered to
 * numbers on Do-Not-Disturb, at any hour), or `generic`, its promotional one.
 */
export const TERMII_CHANNELS = ['dnd', 'generic'] as const;
export type TermiiChannel = (typeof TERMII_CHANNELS)[number];

/** `log`: SMS are written to the log (staging only); `termii`: sent through Termii's API. */
export const SMS_PROVIDERS = ['log', 'termii'] as const;
export type SmsProviderName = (typeof SMS_PROVIDERS)[number];

/** The sender of e-mails when MAIL_FROM is not set (staging only). */
const STAGING_MAIL_FROM = 'Waybill <no-reply@waybill.local>';

/** What a JSON body may weigh so that, with the call's metadata, it fits in a NATS message. */
const MAX_BODY_LIMIT_BYTES = 768 * 1024;

/** A size as `BODY_LIMIT` writes it (`256kb`), in bytes. */
export function sizeInBytes(text: string): number {
  const [, amount, unit] = /^(\d+)(b|kb|mb)$/i.exec(text) ?? [];
  const factor = { b: 1, kb: 1024, mb: 1024 * 1024 }[unit.toLowerCase() as 'b' | 'kb' | 'mb'];
  return Number(amount) * factor;
}

/** One row per environment variable: the single source for validation and the README table. */
const declaredEnvSchema = Joi.object({
  PORT: Joi.number().port().default(3000).description('HTTP port of the gateway'),
  HOST: Joi.string().hostname().default('0.0.0.0').description('Interface the gateway binds to'),
  APP_ENV: Joi.string()
    .valid(...APP_ENVIRONMENTS)
    .default('staging')
    .description(
      'Environment name: the only kind of API key accepted, and `environment` of errors',
    ),
  API_KEY_PREFIX: Joi.string()
    .pattern(/^[a-z][a-z0-9]{0,15}$/)
    .default('wb')
    .description('Prefix of API keys: `<prefix>_<live|staging>_<64 hex>`'),
  ADMIN_TOKEN: Joi.string()
    .empty('')
    .min(16)
    .pattern(/^\S+$/, 'no whitespace')
    // Read as an operator token's at the gateway: counted with theirs, and shut out with them
    // when the account service fails their lookups.
    .pattern(/^wbo_/, { name: 'operator token', invert: true })
    .messages({
      'string.pattern.invert.name':
        '{{#label}} may not start with wbo_, which marks operator tokens; set another (openssl rand -hex 32)',
    })
    .when('APP_ENV', {
      is: 'live',
      then: Joi.invalid(COMPOSE_ADMIN_TOKEN).messages({
        'any.invalid':
          '{{#label}} is the placeholder of docker-compose.yml, published in the repository; set a token of your own (openssl rand -hex 32)',
      }),
    })
    .description(
      'Bearer token for `/admin`; required of the gateway when APP_ENV=live, where the docker-compose.yml placeholder is refused; admin API disabled without it',
    ),
  MONGO_URL: Joi.string()
    .uri({ scheme: ['mongodb', 'mongodb+srv'] })
    .default('mongodb://127.0.0.1:27017')
    .description('MongoDB (or FerretDB) connection string'),
  MONGO_DB_PREFIX: Joi.string()
    .pattern(/^[A-Za-z0-9_]+$/)
    .default('waybill_')
    .description('Prefix of each service database name (`waybill_account`, ...)'),
  MONGO_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .max(10000)
    .default(10000)
    .description(
      'Time limit to reach MongoDB for each operation (503 after it) and each try at start (tried until it answers); at most 10 s, which the leases of claims and locks are reckoned from',
    ),
  DB_COMMAND_METRICS: Joi.boolean()
    .default(false)
    .description(
      'Count every database command by database, collection and command in `waybill_db_commands_total` (each reply is decoded a second time: for measuring, off by default)',
    ),
  NATS_URL: Joi.string()
    .uri({ scheme: ['nats', 'tls'] })
    .empty('')
    .description(
      'NATS transporter URL; unset runs all services in one process without a transporter',
    ),
  NAMESPACE: Joi.string()
    .pattern(/^[a-z0-9-]+$/)
    .default('waybill')
    .description('Moleculer namespace; also prefixes Redis keys. Nodes see only their namespace'),
  NODE_ID: Joi.string().empty('').description('Moleculer node id (default: hostname-pid)'),
  REDIS_URL: Joi.string()
    .uri({ scheme: ['redis', 'rediss'] })
    .default('redis://127.0.0.1:6379')
    .description(
      'Redis for quotas, idempotency keys, upload leases, cancel windows and couriers’ positions',
    ),
  REDIS_COMMAND_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .max(60000)
    .default(DEFAULT_REDIS_COMMAND_TIMEOUT_MS)
    .description(
      'Time limit of each Redis command (503 after it): a Redis that stalls without closing the connection fails requests instead of holding them',
    ),
  S3_ENDPOINT: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('http://127.0.0.1:9000')
    .description('S3-compatible endpoint for uploaded files'),
  S3_REGION: Joi.string().default('us-east-1').description('S3 region'),
  S3_BUCKET: Joi.string()
    .pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)
    .default('waybill')
    .description('Bucket that holds every uploaded file'),
  S3_ACCESS_KEY_ID: Joi.string().empty('').description('S3 access key (default: SDK chain)'),
  S3_SECRET_ACCESS_KEY: Joi.string().empty('').description('S3 secret key (default: SDK chain)'),
  S3_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(10000)
    .description(
      'Time limit to connect to S3, of an idle S3 connection and of the headers of a stored file being downloaded (503 after it; the body of a download is bounded by FILE_TIMEOUT_MS)',
    ),
  CDN_BASE_URL: Joi.string()
    .uri({ scheme: ['https', 'http'] })
    .max(CDN_BASE_URL_MAX)
    .custom((value: string) => {
      // Its canonical form is what URLs are made of, and may be longer (a host in punycode).
      if (!hostsEveryNewKey(value)) {
        throw new Error(`must leave room for a key: a hosted URL is at most ${HOSTED_URL_MAX}`);
      }
      // Every URL made under it must pass the check a URL given back to us passes (a package's
      // image, a download): a base path with `%` would make URLs that every check refuses.
      const made = parseHostedUrl(hostedUrl(LONGEST_NEW_FILE_KEY, value), value);
      if (!made.ok) {
        throw new Error(
          `makes file URLs Waybill would refuse (${made.reason}); choose a base path without it`,
        );
      }
      return value;
    })
    .default('https://cdn.waybill.local')
    .description(
      `Public base URL of hosted files: \`<CDN_BASE_URL>/<key>\`, with no percent-encoded character in its path; at most ${CDN_BASE_URL_MAX} characters as written and as URLs spell it (\`http://1.1\` is \`http://1.0.0.1\`), so that a hosted URL (\`/\` and a key of ${LONGEST_NEW_FILE_KEY.length}) fits a package image or a profile photo (${HOSTED_URL_MAX}) and a list of 1,000 files one NATS reply`,
    ),
  PACKAGE_MAX_OPEN: Joi.number()
    .integer()
    .min(1)
    .max(400)
    .default(400)
    .description(
      'Saved packages one user may keep that no delivery has taken (400 on the next save); at most 400, so that the list fits in one 1 MB NATS message',
    ),
  FILE_MAX_BYTES: Joi.number()
    .integer()
    .min(1)
    .default(20 * 1024 * 1024)
    .description('Largest uploaded file in bytes (413 above it; 20 MB by default)'),
  FILE_ALLOWED_TYPES: Joi.string()
    .custom((value: string) => {
      const types = commaList(value).map((t) => t.toLowerCase());
      const unknown = types.filter((t) => !(SNIFFABLE_TYPES as readonly string[]).includes(t));
      if (types.length === 0 || unknown.length > 0) {
        throw new Error(`choose from ${SNIFFABLE_TYPES.join(', ')}`);
      }
      return value;
    })
    .default('image/jpeg,image/png,image/gif,image/webp,application/pdf')
    .description('Comma list of file types accepted by uploads, recognised from the bytes'),
  FILE_TIMEOUT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(120000)
    .description(
      'Time limit of an upload or download through `/file`, body included (504 after it)',
    ),
  FILE_MAX_UPLOADS: Joi.number()
    .integer()
    .min(1)
    .default(8)
    .description(
      'Uploads one file-service process receives at once, half of them at most for one account (503 with Retry-After beyond); bounds its memory, see docs/files.md',
    ),
  FILE_MAX_UPLOADS_PER_KEY: Joi.number()
    .integer()
    .min(1)
    .default(4)
    .description(
      'Uploads one API key may have in progress at once, counted in Redis across replicas (429 with Retry-After beyond)',
    ),
  FILE_MAX_UPLOADS_PER_USER: Joi.number()
    .integer()
    .min(1)
    .default(8)
    .description(
      'Uploads one account may have in progress at once across its server keys, and as many across its publishable keys, counted in Redis across replicas (429 with Retry-After beyond)',
    ),
  FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY: Joi.number()
    .integer()
    .min(0)
    .default(1024 ** 3)
    .description(
      'Bytes of files one user may store in a UTC day through its server keys, and as many through its publishable keys, counted in Redis across file replicas (429 until midnight UTC beyond); 0: no limit',
    ),
  FILE_MAX_DOWNLOADS: Joi.number()
    .integer()
    .min(1)
    .max(1000)
    .default(32)
    .description(
      'Downloads one file-service process streams at once, half of them at most for one account (503 with Retry-After beyond), each on an S3 connection of a pool kept apart from uploads',
    ),
  FILE_MAX_DOWNLOADS_PER_KEY: Joi.number()
    .integer()
    .min(1)
    .default(8)
    .description(
      'Downloads one API key may have in progress at once, counted in Redis across replicas (429 with Retry-After beyond)',
    ),
  FILE_MAX_DOWNLOADS_PER_USER: Joi.number()
    .integer()
    .min(1)
    .default(16)
    .description(
      'Downloads one account may have in progress at once across its server keys, and as many across its publishable keys, counted in Redis across replicas (429 with Retry-After beyond)',
    ),
  FILE_IDLE_TIMEOUT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(30000)
    .description(
      'How long an upload body may send nothing before it is aborted (408), freeing its memory and slot',
    ),
  FILE_MIN_UPLOAD_BYTES_PER_SECOND: Joi.number()
    .integer()
    .min(0)
    .max(104_857_600)
    .default(1024)
    .description(
      'Bytes per second an upload body must average over every FILE_IDLE_TIMEOUT_MS (408 below, freeing its slot), unless the file service is the slow one; 0: no minimum',
    ),
  FILE_STALE_UPLOAD_MS: Joi.number()
    .integer()
    .min(1000)
    .default(3_600_000)
    .description(
      'An incomplete multipart upload of a hosted file begun longer ago than this is aborted by the file service (a process killed mid-upload leaves one, its parts billed); longer than FILE_TIMEOUT_MS and six S3_TIMEOUT_MS (an upload’s last writes, each retried once)',
    ),
  FILE_UPLOAD_SWEEP_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(600_000)
    .description(
      'How often each file-service replica looks for stale multipart uploads, and deletes again the files of failed uploads S3 refused to delete',
    ),
  FILE_TRANSFER_PORT: Joi.number()
    .port()
    .default(0)
    .description(
      'Internal port on which the file service takes upload bodies from, and streams downloads to, gateways on other nodes (never public); 0 picks a free one',
    ),
  FILE_TRANSFER_HOST: Joi.string()
    .hostname()
    .empty('')
    .description(
      'Address gateways reach FILE_TRANSFER_PORT at (default: HOST when it names one, else the first IP of the node)',
    ),
  SERVICES: Joi.string()
    .default('all')
    .description(
      `Services this process runs: \`all\` or a comma list of ${SERVICE_NAMES.join(', ')}`,
    ),
  LOG_LEVEL: Joi.string()
    .valid('fatal', 'error', 'warn', 'info', 'debug', 'trace')
    .default('info')
    .description('Log level'),
  LOG_FORMAT: Joi.string()
    .valid('json', 'pretty')
    .default('json')
    .description('`json` (one object per line) or `pretty` for a terminal'),
  QUOTA_LIMIT: Joi.number()
    .integer()
    .min(1)
    .default(600)
    .description('Requests allowed per API key per window, unless the key has its own quota'),
  QUOTA_WINDOW_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86400)
    .default(60)
    .description('Length of the quota window in seconds'),
  COURIER_QUOTA_LIMIT: Joi.number()
    .integer()
    .min(1)
    .default(300)
    .description(
      "Requests allowed per courier per window on /courier, whichever of its tokens: the app reports every few seconds, so the default leaves room for steps and retries while a misbehaving or stolen app cannot load the platform's location and matching paths",
    ),
  COURIER_QUOTA_WINDOW_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86400)
    .default(60)
    .description('Length of the courier quota window in seconds'),
  AUTH_FAILURE_LIMIT: Joi.number()
    .integer()
    .min(1)
    .default(30)
    .description(
      'Failed authentications (401) allowed per client address per window; further failures, and lookups of keys the gateway has not accepted before, get 429',
    ),
  AUTH_FAILURE_WINDOW_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86400)
    .default(60)
    .description('Length of the failed-authentication window in seconds'),
  PAGE_REQUEST_LIMIT: Joi.number()
    .integer()
    .min(1)
    .default(600)
    .description(
      'Requests of the pages anyone with a link may open (tracking pages and their streams, checkout pages) allowed per client address per window; further ones get 429. Mobile carriers put many people behind one address: keep it generous',
    ),
  PAGE_REQUEST_WINDOW_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86400)
    .default(60)
    .description('Length of the page request window in seconds'),
  TRUST_PROXY_HOPS: Joi.number()
    .integer()
    .min(0)
    .max(10)
    .default(0)
    .description(
      'Proxies in front of the gateway that append to `X-Forwarded-For`; the client address is the entry this many from the right. 0: the socket address',
    ),
  API_KEY_CACHE_SECONDS: Joi.number()
    .min(0)
    .max(60)
    .default(5)
    .description('How long a gateway caches a key lookup (a revoked key stops within this)'),
  COURIER_TOKEN_CACHE_SECONDS: Joi.number()
    .min(0)
    .max(600)
    .default(60)
    .description(
      'How long a gateway caches a courier token lookup; a revoked token or retired courier is dropped at once by event, at the latest after this',
    ),
  COURIER_ONLINE_MS: Joi.number()
    .integer()
    .min(1000)
    .default(120000)
    .description(
      'A courier whose last location report is older than this is offline: never found by a search for couriers, and given no arrival window on their deliveries',
    ),
  COURIER_LOCATION_FLUSH_MS: Joi.number()
    .integer()
    .min(100)
    .default(10000)
    .description(
      'How often courier positions that moved since the last write are written from Redis to MongoDB (`courier_locations`)',
    ),
  TRACKING_REFRESH_MS: Joi.number()
    .integer()
    .min(500)
    .default(5000)
    .description(
      'How often a gateway reads the courier position again for the tracking pages it streams, once per delivery whatever the number of viewers',
    ),
  TRACKING_HEARTBEAT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(15000)
    .description(
      'How often a tracking page stream gets a heartbeat comment, so that proxies keep it open; with no courier under way, the state is also read again then (a missed status event shows within a beat)',
    ),
  TRACKING_MAX_STREAMS: Joi.number()
    .integer()
    .min(1)
    .default(2000)
    .description('Tracking page streams one gateway process holds open at once (503 beyond)'),
  TRACKING_MAX_STREAMS_PER_ADDRESS: Joi.number()
    .integer()
    .min(1)
    .default(50)
    .description(
      'Tracking page streams one client address may hold open on one gateway process (429 beyond)',
    ),
  TRACKING_STREAM_LIFETIME_MS: Joi.number()
    .integer()
    .min(1000)
    .default(1800000)
    .description(
      'The longest a tracking page stream stays open (up to a tenth less, at random); the page reconnects by itself, to any gateway process',
    ),
  BODY_LIMIT: Joi.string()
    .pattern(/^\d+(b|kb|mb)$/i)
    .custom((value: string) => {
      if (sizeInBytes(value) > MAX_BODY_LIMIT_BYTES) {
        throw new Error('must be at most 768kb: a JSON body crosses NATS in one 1 MB message');
      }
      return value;
    })
    .default('256kb')
    .description('Largest JSON body accepted (413 above it); at most 768kb'),
  REQUEST_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(15000)
    .description('Timeout of a call from the gateway to a service (504 after it)'),
  HTTP_KEEP_ALIVE_MS: Joi.number()
    .integer()
    .min(1000)
    .default(65000)
    .description(
      'How long the gateway keeps an idle client connection open: above the idle timeout of the proxy in front (60 s for ingress-nginx and most load balancers), or the proxy reuses a connection the gateway just closed and answers 502',
    ),
  STOP_GRACE_MS: Joi.number()
    .integer()
    .min(1000)
    .default(20000)
    .description(
      'How long a process may take to stop after SIGTERM, requests in progress included; it exits 1 after it. Above REQUEST_TIMEOUT_MS, within what the platform waits before it kills the process',
    ),
  BACKFILL_AFTER_ROLLOUT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(1800000)
    .description(
      'How long after it starts a node lists again what replicas of an older version stored meanwhile; longer than a rolling update takes',
    ),
  OSRM_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty('')
    .description(
      'OSRM-compatible server for road distances; unset uses straight line × ROUTE_CIRCUITY',
    ),
  OSRM_PROFILE: Joi.string()
    .pattern(/^[A-Za-z0-9_-]+$/)
    .default('driving')
    .description('OSRM routing profile: `/route/v1/<profile>/...`'),
  OSRM_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(2000)
    .description('Time limit of one OSRM call; the estimate is used after it'),
  OSRM_FAILURE_THRESHOLD: Joi.number()
    .integer()
    .min(1)
    .default(5)
    .description('OSRM failures in a row after which it is skipped for OSRM_COOL_DOWN_MS'),
  OSRM_COOL_DOWN_MS: Joi.number()
    .integer()
    .min(0)
    .default(30000)
    .description('How long a failing OSRM is skipped before it is tried again'),
  OSRM_MAX_ANSWER_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(65536)
    .description(
      'Largest OSRM answer read (a route is under 2 KB); a larger one is a failure and the estimate is used',
    ),
  ROUTE_CIRCUITY: Joi.number()
    .min(1)
    .max(3)
    .default(1.3)
    .description('Road ÷ straight-line distance ratio used without OSRM'),
  QUOTE_SECRET: Joi.string()
    .empty('')
    .min(32)
    .pattern(/^\S+$/, 'no whitespace')
    .description(
      "Key under which Mode A quotes' ids are signed (HMAC-SHA256), at least 32 characters; unset: derived from PROOF_CODE_SECRET, and live pricing requires one of the two. Changing it voids the quotes not yet expired",
    ),
  QUOTE_TTL_MS: Joi.number()
    .integer()
    .min(60_000)
    .max(3_600_000)
    .default(900_000)
    .description(
      'How long a Mode A quote holds its price for a POST /api/request that names its quoteId',
    ),
  GEOCODER_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty('')
    .description(
      'Nominatim-compatible server for street-level geocoding; unset uses the offline gazetteer only',
    ),
  GEOCODER_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(2000)
    .description('Time limit of one geocoder call; the offline gazetteer answers after it'),
  GEOCODER_FAILURE_THRESHOLD: Joi.number()
    .integer()
    .min(1)
    .default(5)
    .description('Geocoder failures in a row after which it is skipped for GEOCODER_COOL_DOWN_MS'),
  GEOCODER_COOL_DOWN_MS: Joi.number()
    .integer()
    .min(0)
    .default(30000)
    .description('How long a failing geocoder is skipped before it is tried again'),
  GEOCODER_MAX_ANSWER_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(65536)
    .description(
      'Largest geocoder answer read (a place is under 2 KB); a larger one is a failure and the offline gazetteer answers',
    ),
  GEOCODER_CACHE_MS: Joi.number()
    .integer()
    .min(0)
    .default(3600000)
    .description(
      'How long a geocoder answer is reused for the same text (case and blanks aside), per geo process; 0 asks every time',
    ),
  GEOCODER_CACHE_ENTRIES: Joi.number()
    .integer()
    .min(1)
    .default(5000)
    .description(
      'Geocoder answers kept per geo process: as many found places, and as many texts it found nothing for',
    ),
  GEOCODER_COUNTRIES: Joi.string()
    .pattern(/^[a-z]{2}(,[a-z]{2})*$/)
    .empty('')
    .description(
      'Countries the geocoder searches, ISO alpha-2 lower case (`ng`); unset searches all',
    ),
  PUBLIC_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    // Links are built by appending paths to it.
    .pattern(/^[^?#]*$/, 'no query string or fragment')
    .empty('')
    // Live, every checkout and tracking link texted or e-mailed to people starts with it: a
    // default of localhost would send them nowhere, with every pod ready.
    .when('APP_ENV', {
      is: 'live',
      then: Joi.string()
        .uri({ scheme: ['https'] })
        .required(),
    })
    .description(
      'Public URL of the gateway, for links handed to people (checkout pages, the tracking page); required and https:// when live, default http://localhost:<PORT> otherwise',
    ),
  PAYMENT_PROVIDER: Joi.string()
    .valid(...PAYMENT_PROVIDERS)
    .empty('')
    .description(
      'Hosted checkout: `sandbox` (our own page, which takes no money: staging only, its default) or `paystack` (the default, and the only choice, when live)',
    ),
  PAYSTACK_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://api.paystack.co')
    .description('Base URL of the Paystack-compatible provider (https:// when live)'),
  PAYSTACK_SECRET_KEY: Joi.string()
    .empty('')
    .pattern(/^\S+$/, 'no whitespace')
    .description(
      'Secret key of the Paystack-compatible provider: authenticates our calls and signs its webhooks; required of payment with PAYMENT_PROVIDER=paystack',
    ),
  PAYSTACK_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(10000)
    .description('Time limit of one call to the payment provider'),
  CHECKOUT_TTL_MINUTES: Joi.number()
    .integer()
    .min(1)
    .max(1440)
    .default(30)
    .description('Minutes a hosted checkout waits for its payer before it expires'),
  CHECKOUT_TTL_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86400)
    .description(
      'The same in seconds, for tests and demos; overrides CHECKOUT_TTL_MINUTES when set',
    ),
  PAYMENT_SWEEP_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(10000)
    .description(
      'How often the payment service expires checkouts, sends unacknowledged payment outcomes again, asks about expired checkouts due a late check, takes back what is still owed of refunds made at the provider and gives back debits their refunds gave up',
    ),
  PAYMENT_EVENT_RETRY_MS: Joi.number()
    .integer()
    .min(100)
    .default(30000)
    .description(
      'How long a payment outcome may go unacknowledged before the sweep sends it again',
    ),
  CHECKOUT_LATE_CHECKS_MS: Joi.string()
    .default('3600000,21600000,86400000,259200000')
    .custom((value: string) => {
      const delays = commaList(value).map(Number);
      if (delays.length === 0 || delays.length > 10) throw new Error('give 1 to 10 delays');
      if (delays.some((ms) => !Number.isInteger(ms) || ms < 100 || ms > 604_800_000)) {
        throw new Error('each delay is a whole number of ms from 100 to 604800000 (7 days)');
      }
      if (delays.some((ms, i) => i > 0 && ms <= delays[i - 1])) {
        throw new Error('give the delays in increasing order');
      }
      return value;
    })
    .description(
      "Comma list of delays after a provider's checkout expired at which the provider is asked once more whether it was paid after all (a payment its webhook never reported): 1 h, 6 h, 1 day, 3 days",
    ),
  ORDER_SWEEP_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(10000)
    .description(
      'How often the order service finishes or undoes requests stopped half-way and settles transitions left unsettled (refunds, releases, messages)',
    ),
  ORDER_STALE_REQUEST_MS: Joi.number()
    .integer()
    .min(1000)
    .default(120000)
    .description(
      'How long a delivery request may be under way before the sweep takes it over: longer than REQUEST_TIMEOUT_MS',
    ),
  ORDER_SCHEDULED_SEARCH_LEAD_MS: Joi.number()
    .integer()
    .min(0)
    .default(2_700_000)
    .description(
      "How long before a SCHEDULED delivery must leave to reach its slot's start the search for its courier begins",
    ),
  PROOF_CODE_SECRET: Joi.string()
    .empty('')
    .min(32)
    .pattern(/^\S+$/, 'no whitespace')
    .description(
      'Key under which proof codes are hashed at rest (HMAC-SHA256), at least 32 characters; required of order when live',
    ),
  ORDER_FAULT: Joi.string()
    .valid(...ORDER_FAULT_POINTS)
    .empty('')
    .description(
      'Tests only (NODE_ENV=test): stops the order process at this point of a delivery request',
    ),
  SMTP_URL: Joi.string()
    .uri({ scheme: ['smtp', 'smtps'] })
    .empty('')
    .description(
      'SMTP server of e-mails to people, `smtp://user:pass@host:587` (live: the server must offer STARTTLS, which is required, unless on this host) or `smtps://…:465`; required of order and webhook when live (unset in staging: e-mails go to the log)',
    ),
  MAIL_FROM: Joi.string()
    .empty('')
    .max(200)
    .description(
      `Sender of e-mails to people, \`Name <address>\`; required of order and webhook when live (staging: \`${STAGING_MAIL_FROM}\`)`,
    ),
  SMS_PROVIDER: Joi.string()
    .valid(...SMS_PROVIDERS)
    .empty('')
    .description(
      'Where SMS to people go: `termii` (the default, and the only choice, when live) or `log` (the default in staging: the log)',
    ),
  TERMII_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://api.ng.termii.com')
    .description(
      'Base URL of the Termii API (your account’s, shown on its dashboard); https:// when live, unless on this host',
    ),
  TERMII_API_KEY: Joi.string()
    .empty('')
    .pattern(/^\S+$/, 'no whitespace')
    .description('Termii API key; required of order and webhook with SMS_PROVIDER=termii'),
  TERMII_SENDER_ID: Joi.string()
    .empty('')
    .pattern(/^[A-Za-z0-9 ]{3,11}$/, '3 to 11 letters, digits or spaces')
    .description(
      'Sender ID registered with Termii (3 to 11 characters); required of order and webhook with SMS_PROVIDER=termii',
    ),
  TERMII_CHANNEL: Joi.string()
    .valid(...TERMII_CHANNELS)
    .default('dnd')
    .description(
      'Termii route of the SMS: `dnd` (transactional: delivered to numbers on Do-Not-Disturb and at any hour; activate it on your Termii account) or `generic` (promotional: no number on DND gets it, nor an MTN number between 20:00 and 08:00)',
    ),
  NOTIFY_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(2000)
    .description(
      'How often each order replica sends the notification outbox’s messages that are due',
    ),
  NOTIFY_CONCURRENCY: Joi.number()
    .integer()
    .min(1)
    .max(64)
    .default(8)
    .description(
      'People one replica sends messages to at once (each person’s in the order queued), and the SMTP connections it keeps open',
    ),
  NOTIFY_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .max(60000)
    .default(10000)
    .description(
      'Time limit of each wait on the SMS provider or SMTP server (connection, greeting, each answer); a whole send is given up after twice it',
    ),
  NOTIFY_MAX_ATTEMPTS: Joi.number()
    .integer()
    .min(1)
    .max(50)
    .default(8)
    .description('Attempts an SMS or e-mail gets before it is recorded FAILED with its last error'),
  NOTIFY_RETRY_BASE_MS: Joi.number()
    .integer()
    .min(10)
    .default(10000)
    .description(
      'Wait after a failed attempt of a message, doubled after each further one up to NOTIFY_RETRY_MAX_MS',
    ),
  NOTIFY_RETRY_MAX_MS: Joi.number()
    .integer()
    .min(10)
    .default(600000)
    .description('Longest wait between two attempts of a message'),
  MATCHING_OFFER_TIMEOUT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(30000)
    .description('How long a courier has to accept an offer before it goes to the next one'),
  MATCHING_SEARCH_TIMEOUT_MS: Joi.number()
    .integer()
    .min(1000)
    .default(900000)
    .description(
      'How long a paid delivery is searched for before it ends NO_COURIER_FOUND, refunded and its packages released (a SCHEDULED one: until its slot can no longer be reached)',
    ),
  MATCHING_REASK_AFTER_MS: Joi.number()
    .integer()
    .min(60000)
    .default(1800000)
    .description(
      'How long a courier who declined or let an offer expire is not offered that delivery again: a SCHEDULED delivery, searched for hours, asks them again after it',
    ),
  MATCHING_RADIUS_KM: Joi.string()
    .pattern(/^\d+(\.\d+)?,\d+(\.\d+)?,\d+(\.\d+)?$/, 'start,step,max')
    .default('3,3,15')
    .description(
      'Search radius around the pickup in km, as start,step,max: it grows by step every MATCHING_WIDEN_EVERY_MS up to max (at most 100)',
    ),
  MATCHING_WIDEN_EVERY_MS: Joi.number()
    .integer()
    .min(1000)
    .default(60000)
    .description('How often the search radius grows by its step'),
  MATCHING_SWEEP_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(1000)
    .description(
      'How often running searches are stepped: expired offers closed, the radius widened, searches ended',
    ),
  MATCHING_IDLE_STEP_MAX_MS: Joi.number()
    .integer()
    .min(100)
    .default(8000)
    .description(
      'Longest wait between two sweeps of a search with an open offer, or with no courier in reach (each such step doubles it from MATCHING_SWEEP_INTERVAL_MS); a courier reported or freed in reach ends it',
    ),
  MATCHING_COURIER_CASH_LIMIT_NAIRA: Joi.number()
    .integer()
    .min(0)
    .max(1_000_000_000)
    .default(200_000)
    .description(
      'A courier who owes cash collected on delivery is not offered a pay-on-delivery delivery that would take what they owe past this (NGN; one who owes nothing may take any); 0: no limit',
    ),
  SIMULATOR_TIME_SCALE: Joi.number()
    .min(1)
    .max(100000)
    .default(60)
    .description(
      'Staging: how much faster than real time a delivery with the Waybill-Simulate header runs (its virtual courier, its search)',
    ),
  WEBHOOK_SECRET_KEY: Joi.string()
    .empty('')
    .min(32)
    .pattern(/^\S+$/, 'no whitespace')
    .description(
      "Key under which webhook signing secrets are sealed at rest (AES-256-GCM, key = SHA-256 of this), at least 32 characters; required of webhook when live. Changing it makes every stored secret unreadable: rotate the endpoints' secrets after",
    ),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Joi.boolean()
    .default(false)
    .when('APP_ENV', { is: 'live', then: Joi.valid(false) })
    .description(
      'Accept webhook URLs on private and loopback addresses (staging and tests only; refused when live). Link-local and cloud metadata addresses stay refused',
    ),
  WEBHOOK_DENY_CIDRS: Joi.string()
    .allow('')
    .default('')
    .custom((value: string) => {
      const bad = commaList(value).filter((range) => parseRange(range) === null);
      if (bad.length > 0) {
        throw new Error(`not an address or range: ${bad.join(', ')}; give e.g. 203.0.113.0/24`);
      }
      return value;
    })
    .description(
      "Comma list of addresses and ranges (203.0.113.7, 203.0.113.0/24, 2a05:d014::/32) webhooks never call, though public: the platform's own addresses, a cloud network's routable IPv6 prefix",
    ),
  WEBHOOK_MAX_ENDPOINTS: Joi.number()
    .integer()
    .min(1)
    .max(100)
    .default(10)
    .description('Webhook endpoints a user may register'),
  WEBHOOK_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .max(60000)
    .default(10000)
    .description('How long a webhook endpoint has to answer before the attempt counts as failed'),
  WEBHOOK_RETRY_WINDOW_MS: Joi.number()
    .integer()
    .min(1000)
    .default(86400000)
    .description('How long a webhook message is retried after its first attempt'),
  WEBHOOK_DISABLE_AFTER_MS: Joi.number()
    .integer()
    .min(1000)
    .default(86400000)
    .description(
      'An endpoint whose attempts have all failed for this long is disabled (`GET /api/webhooks` says why, and its owner is told by e-mail) until its owner enables it',
    ),
  WEBHOOK_BACKOFF_BASE_MS: Joi.number()
    .integer()
    .min(10)
    .default(10000)
    .description('Wait before the second attempt; each later wait doubles (with jitter)'),
  WEBHOOK_BACKOFF_MAX_MS: Joi.number()
    .integer()
    .min(10)
    .default(3600000)
    .description('Longest wait between two attempts'),
  WEBHOOK_DISPATCH_INTERVAL_MS: Joi.number()
    .integer()
    .min(10)
    .default(500)
    .description('How often the dispatcher looks for messages due'),
  WEBHOOK_CONCURRENCY: Joi.number()
    .integer()
    .min(1)
    .max(1000)
    .default(32)
    .description('Webhook requests in flight at once per dispatcher process'),
  WEBHOOK_RETENTION_DAYS: Joi.number()
    .integer()
    .min(1)
    .max(3650)
    .default(30)
    .description(
      'Days a webhook message is kept after it was delivered or given up, with its attempts and event; then it is deleted (`GET /api/webhooks/:webhookId/deliveries` no longer lists it). Messages still to send are never deleted',
    ),
  WEBHOOK_RETENTION_MS: Joi.number()
    .integer()
    .min(1000)
    .description('The same in milliseconds, for tests; overrides WEBHOOK_RETENTION_DAYS when set'),
  WEBHOOK_RETENTION_INTERVAL_MS: Joi.number()
    .integer()
    .min(100)
    .default(60000)
    .description(
      'How often each webhook replica deletes what WEBHOOK_RETENTION_DAYS lets go (at most 2,000 messages a round)',
    ),
  OPS_PORT: Joi.number()
    .port()
    .default(9464)
    .description(
      'Port of `/health/live`, `/health/ready` and `/metrics` in every process; 0 disables',
    ),
}).unknown(true);

/** Every variable's name, as declared. */
const DECLARED_VARIABLES = Object.keys(declaredEnvSchema.describe().keys ?? {});

/** The longest delay Node's timers take: a longer one runs after 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `_MS` variables are durations, most of them handed to setTimeout or setInterval, which run a
 * longer delay than MAX_TIMER_MS after 1 ms: a sweep interval of 30 days would run every
 * millisecond. All are capped here, by name, so that a variable added later is capped too;
 * joi's `max` replaces an earlier one, so a variable's own tighter cap is left as it is.
 */
const envSchema = declaredEnvSchema.fork(
  DECLARED_VARIABLES.filter((name) => name.endsWith('_MS')),
  (schema) => {
    const rules = (schema.describe().rules ?? []) as { name: string; args?: { limit?: unknown } }[];
    const ownMax = rules.find((rule) => rule.name === 'max')?.args?.limit;
    if (typeof ownMax === 'number' && ownMax <= MAX_TIMER_MS) return schema;
    return (schema as Joi.NumberSchema).max(MAX_TIMER_MS).messages({
      'number.max': '{{#label}} must be at most {{#limit}}: Node runs a longer timer after 1 ms',
    });
  },
);

export type ConfigVariable = { name: string; default: string; description: string };

/** The variables, defaults and meanings, for docs and `--help`. */
export function describeConfig(): ConfigVariable[] {
  const described = envSchema.describe();
  return Object.entries(described.keys ?? {}).map(([name, d]) => {
    const info = d as { flags?: { default?: unknown; description?: string } };
    const def = info.flags?.default;
    return {
      name,
      default: def === undefined ? '' : String(def),
      description: info.flags?.description ?? '',
    };
  });
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The items of a comma list, trimmed, empty ones left out. */
function commaList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function parseServices(value: string): ServiceName[] {
  const names = commaList(value);
  if (names.length === 0 || names.includes('all')) return [...SERVICE_NAMES];
  const unknown = names.filter((n) => !(SERVICE_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      `SERVICES: unknown service ${unknown.join(', ')}; choose from all, ${SERVICE_NAMES.join(', ')}`,
    );
  }
  return [...new Set(names)] as ServiceName[];
}

/** The ConfigMap's addresses that are the operator's own (deploy/k8s/configmap.yaml). */
const OWN_ADDRESSES = [
  'PUBLIC_BASE_URL',
  'CDN_BASE_URL',
  'S3_ENDPOINT',
  'MAIL_FROM',
  // Termii refuses a sender ID its account has not registered: every SMS would fail.
  'TERMII_SENDER_ID',
];

/** What deploy/k8s/secret.example.yaml puts where a value of the operator's own belongs. */
export const EXAMPLE_PLACEHOLDER = 'REPLACE-ME';

/**
 * Live refuses a variable still holding the example Secret's placeholder: an `ADMIN_TOKEN` or
 * a key left as the repository shows it would hand `/admin`, or the proof codes and webhook
 * secrets, to anyone who reads it.
 */
function refusePlaceholders(
  env: NodeJS.ProcessEnv,
  names: readonly string[] = DECLARED_VARIABLES,
): void {
  for (const name of names) {
    if (env[name]?.includes(EXAMPLE_PLACEHOLDER)) {
      throw new ConfigError(
        `${name}: still holds the example's ${EXAMPLE_PLACEHOLDER}, published in the repository; set a value of your own`,
      );
    }
  }
}

/**
 * joi's pattern messages quote the value: a secret stored with a stray newline (a common slip
 * in a Kubernetes secret) would be printed to the pod's log. The variable and the rule say
 * enough to fix it.
 */
const VALUE_UNSHOWN = {
  'string.pattern.base':
    '{{#label}} does not match the required pattern {{#regex}} (its value is not shown)',
  'string.pattern.name': '{{#label}} does not match the {{#name}} pattern (its value is not shown)',
  'string.pattern.invert.base':
    '{{#label}} matches the refused pattern {{#regex}} (its value is not shown)',
  'string.pattern.invert.name':
    '{{#label}} matches the refused {{#name}} pattern (its value is not shown)',
};

/**
 * A key of its own for one use, from a secret the operator already keeps (HMAC-SHA256 under a
 * label): a live platform gains a use without a new Secret to create before it upgrades.
 */
function derivedKey(secret: string, label: string): string {
  return createHmac('sha256', secret).update(label).digest('base64url');
}

/**
 * Reads and validates the environment; throws ConfigError naming the first bad variable.
 * `runs`, when given, are the services this process runs in place of SERVICES: `[]` for a
 * command that acts through the running platform and needs none of their settings or keys.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  { runs }: { runs?: readonly ServiceName[] } = {},
): Config {
  // The addresses people and files are sent to, and the name texts are sent by, are refused
  // in every environment: a staging copy of the manifests texts real people too. First, so that
  // a placeholder that is no valid value (`REPLACE-ME` as a sender ID) is named as such.
  refusePlaceholders(env, OWN_ADDRESSES);
  const { value, error } = envSchema.validate(env, {
    abortEarly: true,
    convert: true,
    messages: VALUE_UNSHOWN,
  });
  if (error) {
    const variable = String(error.details[0]?.path[0] ?? 'environment');
    throw new ConfigError(`${variable}: ${error.details[0]?.message ?? error.message}`);
  }
  requireAtLeast(value, 'NOTIFY_RETRY_MAX_MS', 'NOTIFY_RETRY_BASE_MS');
  requireAtLeast(value, 'WEBHOOK_BACKOFF_MAX_MS', 'WEBHOOK_BACKOFF_BASE_MS');
  if (value.APP_ENV === 'live') refusePlaceholders(env);
  const services = runs ? [...runs] : parseServices(value.SERVICES);
  const reads = new Set(secretsOf(services));
  if (value.APP_ENV === 'live') requireLiveKeys(value, services, reads);
  // Live, a key this process does not read (none of its readers runs here) is one of its own:
  // used by mistake, what it signs fails closed elsewhere, where the repository's staging key
  // would let anyone forge it.
  const unreadKey = (staging: string) =>
    value.APP_ENV === 'live' ? randomBytes(32).toString('base64url') : staging;
  const proofCodeSecret: string = value.PROOF_CODE_SECRET ?? unreadKey(STAGING_PROOF_CODE_SECRET);
  return {
    port: value.PORT,
    host: value.HOST,
    appEnv: value.APP_ENV,
    apiKeyPrefix: value.API_KEY_PREFIX,
    adminToken: value.ADMIN_TOKEN,
    mongoUrl: value.MONGO_URL,
    mongoDbPrefix: value.MONGO_DB_PREFIX,
    mongoTimeoutMs: value.MONGO_TIMEOUT_MS,
    dbCommandMetrics: value.DB_COMMAND_METRICS,
    natsUrl: value.NATS_URL,
    namespace: value.NAMESPACE,
    nodeId: value.NODE_ID,
    redisUrl: value.REDIS_URL,
    redisCommandTimeoutMs: value.REDIS_COMMAND_TIMEOUT_MS,
    s3: {
      endpoint: value.S3_ENDPOINT,
      region: value.S3_REGION,
      bucket: value.S3_BUCKET,
      accessKeyId: value.S3_ACCESS_KEY_ID,
      secretAccessKey: value.S3_SECRET_ACCESS_KEY,
      timeoutMs: value.S3_TIMEOUT_MS,
    },
    cdnBaseUrl: value.CDN_BASE_URL.replace(/\/+$/, ''),
    packageMaxOpen: value.PACKAGE_MAX_OPEN,
    files: {
      maxBytes: value.FILE_MAX_BYTES,
      allowedTypes: [
        ...new Set(commaList(value.FILE_ALLOWED_TYPES as string).map((t) => t.toLowerCase())),
      ] as SniffableType[],
      timeoutMs: value.FILE_TIMEOUT_MS,
      maxUploads: value.FILE_MAX_UPLOADS,
      maxUploadsPerKey: value.FILE_MAX_UPLOADS_PER_KEY,
      maxUploadsPerUser: value.FILE_MAX_UPLOADS_PER_USER,
      maxUploadBytesPerUserPerDay: value.FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY,
      maxDownloads: value.FILE_MAX_DOWNLOADS,
      maxDownloadsPerKey: value.FILE_MAX_DOWNLOADS_PER_KEY,
      maxDownloadsPerUser: value.FILE_MAX_DOWNLOADS_PER_USER,
      idleTimeoutMs: value.FILE_IDLE_TIMEOUT_MS,
      minUploadBytesPerSecond: value.FILE_MIN_UPLOAD_BYTES_PER_SECOND,
      // An upload's multipart upload is begun once its first part is full, and may be written
      // to until its body's time and its last writes are over.
      staleUploadMs: outlasting(
        ['FILE_STALE_UPLOAD_MS', value.FILE_STALE_UPLOAD_MS],
        [
          'FILE_TIMEOUT_MS and six S3_TIMEOUT_MS',
          value.FILE_TIMEOUT_MS + lastUploadWritesMs(value.S3_TIMEOUT_MS),
        ],
        'or the sweep aborts uploads still under way',
      ),
      uploadSweepIntervalMs: value.FILE_UPLOAD_SWEEP_INTERVAL_MS,
      transferPort: value.FILE_TRANSFER_PORT,
      transferHost: value.FILE_TRANSFER_HOST,
    },
    services,
    logLevel: value.LOG_LEVEL,
    logFormat: value.LOG_FORMAT,
    quota: { limit: value.QUOTA_LIMIT, windowSeconds: value.QUOTA_WINDOW_SECONDS },
    courierQuota: {
      limit: value.COURIER_QUOTA_LIMIT,
      windowSeconds: value.COURIER_QUOTA_WINDOW_SECONDS,
    },
    authFailures: {
      limit: value.AUTH_FAILURE_LIMIT,
      windowSeconds: value.AUTH_FAILURE_WINDOW_SECONDS,
    },
    pageRequests: {
      limit: value.PAGE_REQUEST_LIMIT,
      windowSeconds: value.PAGE_REQUEST_WINDOW_SECONDS,
    },
    trustProxyHops: value.TRUST_PROXY_HOPS,
    apiKeyCacheSeconds: value.API_KEY_CACHE_SECONDS,
    courierTokenCacheSeconds: value.COURIER_TOKEN_CACHE_SECONDS,
    courierPositions: {
      onlineMs: value.COURIER_ONLINE_MS,
      flushMs: value.COURIER_LOCATION_FLUSH_MS,
    },
    tracking: {
      refreshMs: value.TRACKING_REFRESH_MS,
      heartbeatMs: value.TRACKING_HEARTBEAT_MS,
      maxStreams: value.TRACKING_MAX_STREAMS,
      maxStreamsPerAddress: value.TRACKING_MAX_STREAMS_PER_ADDRESS,
      streamLifetimeMs: value.TRACKING_STREAM_LIFETIME_MS,
    },
    bodyLimit: value.BODY_LIMIT,
    requestTimeoutMs: value.REQUEST_TIMEOUT_MS,
    httpKeepAliveMs: value.HTTP_KEEP_ALIVE_MS,
    // A stop shorter than a call may last cuts the requests it should let finish (exit 1).
    stopGraceMs: outlasting(
      ['STOP_GRACE_MS', value.STOP_GRACE_MS],
      ['REQUEST_TIMEOUT_MS', value.REQUEST_TIMEOUT_MS],
      'or a stop cuts requests still under way',
    ),
    backfillAfterRolloutMs: value.BACKFILL_AFTER_ROLLOUT_MS,
    background: true,
    opsPort: value.OPS_PORT,
    routing: {
      osrmUrl: value.OSRM_URL,
      osrmProfile: value.OSRM_PROFILE,
      osrmTimeoutMs: value.OSRM_TIMEOUT_MS,
      osrmFailureThreshold: value.OSRM_FAILURE_THRESHOLD,
      osrmCoolDownMs: value.OSRM_COOL_DOWN_MS,
      osrmMaxAnswerBytes: value.OSRM_MAX_ANSWER_BYTES,
      circuity: value.ROUTE_CIRCUITY,
    },
    quotes: {
      secret: value.QUOTE_SECRET ?? derivedKey(proofCodeSecret, 'waybill quote ids'),
      ttlMs: value.QUOTE_TTL_MS,
    },
    geocoder: {
      url: value.GEOCODER_URL,
      timeoutMs: value.GEOCODER_TIMEOUT_MS,
      countryCodes: value.GEOCODER_COUNTRIES,
      failureThreshold: value.GEOCODER_FAILURE_THRESHOLD,
      coolDownMs: value.GEOCODER_COOL_DOWN_MS,
      maxAnswerBytes: value.GEOCODER_MAX_ANSWER_BYTES,
      cacheMs: value.GEOCODER_CACHE_MS,
      cacheEntries: value.GEOCODER_CACHE_ENTRIES,
    },
    payment: paymentConfig(value, reads),
    order: {
      sweepIntervalMs: value.ORDER_SWEEP_INTERVAL_MS,
      // A request younger than the gateway's timeout may still be running: were the sweep to
      // take it over, it would undo a request whose caller is still waiting for it.
      staleRequestMs: outlasting(
        ['ORDER_STALE_REQUEST_MS', value.ORDER_STALE_REQUEST_MS],
        ['REQUEST_TIMEOUT_MS', value.REQUEST_TIMEOUT_MS],
        'or the sweep takes over requests still under way',
      ),
      proofCodeSecret,
      fault: orderFault(value.ORDER_FAULT, env),
      scheduledSearchLeadMs: value.ORDER_SCHEDULED_SEARCH_LEAD_MS,
    },
    notifications: notificationsConfig(value, reads),
    matching: {
      offerTimeoutMs: value.MATCHING_OFFER_TIMEOUT_MS,
      searchTimeoutMs: value.MATCHING_SEARCH_TIMEOUT_MS,
      reaskAfterMs: value.MATCHING_REASK_AFTER_MS,
      reach: searchReach(value.MATCHING_RADIUS_KM, value.MATCHING_WIDEN_EVERY_MS),
      sweepIntervalMs: value.MATCHING_SWEEP_INTERVAL_MS,
      idleStepMaxMs: value.MATCHING_IDLE_STEP_MAX_MS,
      simulatorTimeScale: value.SIMULATOR_TIME_SCALE,
      cashLimitKobo: value.MATCHING_COURIER_CASH_LIMIT_NAIRA * 100,
    },
    webhook: {
      secretKey: value.WEBHOOK_SECRET_KEY ?? unreadKey(STAGING_WEBHOOK_SECRET_KEY),
      allowPrivateTargets: value.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      deniedTargets: commaList(value.WEBHOOK_DENY_CIDRS),
      maxEndpoints: value.WEBHOOK_MAX_ENDPOINTS,
      timeoutMs: value.WEBHOOK_TIMEOUT_MS,
      retryWindowMs: value.WEBHOOK_RETRY_WINDOW_MS,
      disableAfterMs: value.WEBHOOK_DISABLE_AFTER_MS,
      backoffBaseMs: value.WEBHOOK_BACKOFF_BASE_MS,
      backoffMaxMs: value.WEBHOOK_BACKOFF_MAX_MS,
      dispatchIntervalMs: value.WEBHOOK_DISPATCH_INTERVAL_MS,
      concurrency: value.WEBHOOK_CONCURRENCY,
      retentionMs: value.WEBHOOK_RETENTION_MS ?? value.WEBHOOK_RETENTION_DAYS * 86_400_000,
      retentionIntervalMs: value.WEBHOOK_RETENTION_INTERVAL_MS,
    },
  };
}

/** The keys live requires of their readers whatever the providers, and what each is for. */
const LIVE_KEYS = {
  ADMIN_TOKEN: "the admin API's bearer token, 16 characters or more",
  PROOF_CODE_SECRET: 'the key of proof codes at rest, 32 characters or more',
  WEBHOOK_SECRET_KEY: "the key sealing webhook endpoints' signing secrets, 32 characters or more",
} satisfies Partial<Record<SecretName, string>>;

/** The services of `services` that read `secret`, for a message: `order and webhook`. */
const readersAmong = (secret: SecretName, services: readonly ServiceName[]) =>
  SECRET_READERS[secret].filter((reader) => services.includes(reader)).join(' and ');

/** Refuses a live process without a key one of its services reads (the providers' are theirs). */
function requireLiveKeys(
  value: Partial<Record<SecretName, string>>,
  services: readonly ServiceName[],
  reads: ReadonlySet<SecretName>,
): void {
  for (const [name, use] of Object.entries(LIVE_KEYS) as [SecretName, string][]) {
    if (reads.has(name) && value[name] === undefined) {
      throw new ConfigError(
        `${name}: required when APP_ENV=live by ${readersAmong(name, services)} (${use}); e.g. openssl rand -hex 32`,
      );
    }
  }
  if (reads.has('QUOTE_SECRET') && !value.QUOTE_SECRET && !value.PROOF_CODE_SECRET) {
    throw new ConfigError(
      'QUOTE_SECRET: required when APP_ENV=live by pricing (the key of quote ids, 32 characters or more; e.g. openssl rand -hex 32), unless PROOF_CODE_SECRET is set, from which it is then derived',
    );
  }
}

/** Refuses a cap below the value it caps (a backoff's longest wait below its first). */
function requireAtLeast(value: Record<string, number>, cap: string, floor: string): void {
  if (value[cap] < value[floor]) {
    throw new ConfigError(`${cap}: must be at least ${floor} (${value[floor]}); raise it`);
  }
}

/**
 * The widest search for couriers (courier-matching positions.ts): farther, the rings read
 * become thousands of cells. A radius that grows past it would fail every step of a search.
 */
export const MAX_SEARCH_KM = 100;

function searchReach(radius: string, widenEveryMs: number): Config['matching']['reach'] {
  const [startKm, stepKm, maxKm] = radius.split(',').map(Number);
  if (startKm <= 0 || maxKm < startKm) {
    throw new ConfigError(
      `MATCHING_RADIUS_KM: start must be above 0 and max at least start, got ${radius}`,
    );
  }
  if (maxKm > MAX_SEARCH_KM) {
    throw new ConfigError(
      `MATCHING_RADIUS_KM: max must be at most ${MAX_SEARCH_KM} km, the widest search for couriers, got ${radius}`,
    );
  }
  return { startKm, stepKm, maxKm, widenEveryMs };
}

/**
 * Attempts the file service's S3 client makes of a request (one retry): a dead or hanging
 * server costs a request up to this many S3_TIMEOUT_MS.
 */
export const S3_ATTEMPTS = 2;

/**
 * How long an upload's writes may go on once its body has had its FILE_TIMEOUT_MS: it may wait
 * for a part in flight to free a place for its last, send that part, then complete the file
 * (or, failed, abort it): three S3 requests one after the other, each of S3_ATTEMPTS.
 */
export const lastUploadWritesMs = (s3TimeoutMs: number) => 3 * S3_ATTEMPTS * s3TimeoutMs;

/** A wait that must be longer than another, or `consequence` follows: its value, or why not. */
function outlasting(
  [name, ms]: [string, number],
  [otherName, otherMs]: [string, number],
  consequence: string,
): number {
  if (ms <= otherMs) {
    throw new ConfigError(
      `${name}: must be longer than ${otherName} (${otherMs}), ${consequence}; raise it`,
    );
  }
  return ms;
}

function orderFault(
  fault: OrderFaultPoint | undefined,
  env: NodeJS.ProcessEnv,
): OrderFaultPoint | undefined {
  if (fault && env.NODE_ENV !== 'test') {
    throw new ConfigError('ORDER_FAULT: honoured only under tests (NODE_ENV=test); unset it');
  }
  return fault;
}

/** The gateway's public URL, without a trailing slash: links handed to people start with it. */
function publicBaseUrl(value: { PORT: number; PUBLIC_BASE_URL?: string }): string {
  return (value.PUBLIC_BASE_URL ?? `http://localhost:${value.PORT}`).replace(/\/+$/, '');
}

/** The variables `paymentConfig` reads, as validated. */
interface PaymentEnv {
  APP_ENV: AppEnvironment;
  PORT: number;
  PUBLIC_BASE_URL?: string;
  PAYMENT_PROVIDER?: PaymentProviderName;
  PAYSTACK_BASE_URL: string;
  PAYSTACK_SECRET_KEY?: string;
  PAYSTACK_TIMEOUT_MS: number;
  CHECKOUT_TTL_MINUTES: number;
  CHECKOUT_TTL_SECONDS?: number;
  PAYMENT_SWEEP_INTERVAL_MS: number;
  PAYMENT_EVENT_RETRY_MS: number;
  CHECKOUT_LATE_CHECKS_MS: string;
}

function paymentConfig(value: PaymentEnv, reads: ReadonlySet<SecretName>): Config['payment'] {
  const provider = value.PAYMENT_PROVIDER ?? (value.APP_ENV === 'live' ? 'paystack' : 'sandbox');
  if (value.APP_ENV === 'live' && provider === 'sandbox') {
    throw new ConfigError(
      'PAYMENT_PROVIDER: `sandbox` takes no money (its page pays any checkout) and is for staging only; set PAYMENT_PROVIDER=paystack with PAYSTACK_SECRET_KEY',
    );
  }
  if (value.APP_ENV === 'live' && !value.PAYSTACK_BASE_URL.startsWith('https://')) {
    // The secret key rides every call, and the verify answer alone authorises a credit.
    throw new ConfigError(
      'PAYSTACK_BASE_URL: must be https:// when live (the secret key and the answers that credit wallets ride on it)',
    );
  }
  if (provider === 'paystack' && reads.has('PAYSTACK_SECRET_KEY') && !value.PAYSTACK_SECRET_KEY) {
    throw new ConfigError(
      'PAYSTACK_SECRET_KEY: required by payment with PAYMENT_PROVIDER=paystack (the default when APP_ENV=live)',
    );
  }
  return {
    provider,
    publicBaseUrl: publicBaseUrl(value),
    paystack: {
      baseUrl: value.PAYSTACK_BASE_URL.replace(/\/+$/, ''),
      secretKey: value.PAYSTACK_SECRET_KEY,
      timeoutMs: value.PAYSTACK_TIMEOUT_MS,
    },
    checkoutTtlMs:
      value.CHECKOUT_TTL_SECONDS !== undefined
        ? value.CHECKOUT_TTL_SECONDS * 1000
        : value.CHECKOUT_TTL_MINUTES * 60_000,
    sweepIntervalMs: value.PAYMENT_SWEEP_INTERVAL_MS,
    eventRetryMs: value.PAYMENT_EVENT_RETRY_MS,
    lateChecksMs: commaList(value.CHECKOUT_LATE_CHECKS_MS).map(Number),
  };
}

/** The variables `notificationsConfig` reads, as validated. */
interface NotificationsEnv {
  APP_ENV: AppEnvironment;
  PORT: number;
  PUBLIC_BASE_URL?: string;
  SMTP_URL?: string;
  MAIL_FROM?: string;
  SMS_PROVIDER?: SmsProviderName;
  TERMII_BASE_URL: string;
  TERMII_API_KEY?: string;
  TERMII_SENDER_ID?: string;
  TERMII_CHANNEL: TermiiChannel;
  NOTIFY_INTERVAL_MS: number;
  NOTIFY_CONCURRENCY: number;
  NOTIFY_TIMEOUT_MS: number;
  NOTIFY_MAX_ATTEMPTS: number;
  NOTIFY_RETRY_BASE_MS: number;
  NOTIFY_RETRY_MAX_MS: number;
}

/**
 * Live, every message must reach a person: the log sinks (which would not) are refused, and so,
 * in the processes that send (order and webhook), is a provider missing its credentials, at
 * start rather than at the first proof code.
 */
/** Whether a URL names this host (a sidecar, a local relay): nothing on the way to read it. */
function onThisHost(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function notificationsConfig(
  value: NotificationsEnv,
  reads: ReadonlySet<SecretName>,
): Config['notifications'] {
  const live = value.APP_ENV === 'live';
  const provider = value.SMS_PROVIDER ?? (live ? 'termii' : 'log');
  if (live && provider === 'log') {
    throw new ConfigError(
      'SMS_PROVIDER: `log` sends no SMS and is for staging only; set SMS_PROVIDER=termii with TERMII_API_KEY and TERMII_SENDER_ID',
    );
  }
  // SMTP_URL and TERMII_API_KEY have the same readers: the processes that send messages.
  const sends = reads.has('SMTP_URL');
  if (sends && provider === 'termii' && (!value.TERMII_API_KEY || !value.TERMII_SENDER_ID)) {
    const missing = value.TERMII_API_KEY ? 'TERMII_SENDER_ID' : 'TERMII_API_KEY';
    throw new ConfigError(
      `${missing}: required by order and webhook with SMS_PROVIDER=termii (the default when APP_ENV=live); set TERMII_API_KEY and TERMII_SENDER_ID from your Termii dashboard`,
    );
  }
  const termiiInClear = !value.TERMII_BASE_URL.startsWith('https://');
  if (
    sends &&
    live &&
    provider === 'termii' &&
    termiiInClear &&
    !onThisHost(value.TERMII_BASE_URL)
  ) {
    throw new ConfigError(
      'TERMII_BASE_URL: must be https:// when live, unless on this host (a local proxy): the API key and every SMS, delivery codes included, ride on it',
    );
  }
  if (sends && live && !value.SMTP_URL) {
    throw new ConfigError(
      'SMTP_URL: required when APP_ENV=live by order and webhook, e-mails to people (proof codes, payment links) go through it; e.g. smtps://user:pass@smtp.example.com:465',
    );
  }
  if (sends && live && !value.MAIL_FROM) {
    throw new ConfigError(
      'MAIL_FROM: required when APP_ENV=live by order and webhook, the sender of e-mails to people; e.g. Waybill <deliveries@example.com>',
    );
  }
  return {
    publicBaseUrl: publicBaseUrl(value),
    smtpUrl: value.SMTP_URL,
    // A relay on this host (a sidecar) is reached without a network to read the login on.
    smtpRequireTls: live && !(value.SMTP_URL && onThisHost(value.SMTP_URL)),
    mailFrom: value.MAIL_FROM ?? STAGING_MAIL_FROM,
    sms: {
      provider,
      termii: {
        baseUrl: value.TERMII_BASE_URL.replace(/\/+$/, ''),
        apiKey: value.TERMII_API_KEY,
        senderId: value.TERMII_SENDER_ID,
        channel: value.TERMII_CHANNEL,
      },
    },
    intervalMs: value.NOTIFY_INTERVAL_MS,
    concurrency: value.NOTIFY_CONCURRENCY,
    timeoutMs: value.NOTIFY_TIMEOUT_MS,
    retry: {
      maxAttempts: value.NOTIFY_MAX_ATTEMPTS,
      baseDelayMs: value.NOTIFY_RETRY_BASE_MS,
      maxDelayMs: value.NOTIFY_RETRY_MAX_MS,
    },
  };
}
