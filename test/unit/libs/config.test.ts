import {
  ConfigError,
  SECRET_READERS,
  SERVICE_NAMES,
  SNIFFABLE_TYPES,
  describeConfig,
  loadConfig,
  secretsOf,
  type Config,
  type SecretName,
  type ServiceName,
} from '../../../libs/config';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { thrownBy } from '../helpers';

const SERVICES_DIR = join(__dirname, '../../../services');

const ADMIN_TOKEN = 'an-admin-token-of-32-characters!';
const PROOF_CODE_SECRET = 'a-proof-code-key-of-32-characters';
/** How live reaches people: an SMTP server and Termii. */
const LIVE_NOTIFY = {
  SMTP_URL: 'smtps://mailer:secret@smtp.example.com:465',
  MAIL_FROM: 'Waybill <deliveries@example.com>',
  TERMII_API_KEY: 'termii-key',
  TERMII_SENDER_ID: 'Waybill',
};
/** What live requires besides the payment provider's key. */
const WEBHOOK_SECRET_KEY = 'a-webhook-secret-key-of-32-characters';
const QUOTE_SECRET = 'a-quote-signing-key-of-32-characters';
const LIVE = {
  APP_ENV: 'live',
  PUBLIC_BASE_URL: 'https://api.waybill.example',
  ADMIN_TOKEN,
  PROOF_CODE_SECRET,
  WEBHOOK_SECRET_KEY,
  QUOTE_SECRET,
  ...LIVE_NOTIFY,
};

/** The ConfigError that `loadConfig(env)` throws. */
function configErrorFor(env: NodeJS.ProcessEnv): ConfigError {
  const err = thrownBy(() => loadConfig(env));
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('loadConfig defaults', () => {
  const config = loadConfig({});

  it('uses the documented defaults for an empty environment', () => {
    expect(config).toEqual({
      port: 3000,
      host: '0.0.0.0',
      appEnv: 'staging',
      apiKeyPrefix: 'wb',
      adminToken: undefined,
      mongoUrl: 'mongodb://127.0.0.1:27017',
      mongoDbPrefix: 'waybill_',
      mongoTimeoutMs: 10000,
      dbCommandMetrics: false,
      natsUrl: undefined,
      namespace: 'waybill',
      nodeId: undefined,
      redisUrl: 'redis://127.0.0.1:6379',
      redisCommandTimeoutMs: 5000,
      s3: {
        endpoint: 'http://127.0.0.1:9000',
        region: 'us-east-1',
        bucket: 'waybill',
        accessKeyId: undefined,
        secretAccessKey: undefined,
        timeoutMs: 10000,
      },
      cdnBaseUrl: 'https://cdn.waybill.local',
      packageMaxOpen: 400,
      files: {
        maxBytes: 20 * 1024 * 1024,
        allowedTypes: ['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'application/pdf'],
        timeoutMs: 120000,
        maxUploads: 8,
        maxUploadsPerKey: 4,
        maxUploadsPerUser: 8,
        maxUploadBytesPerUserPerDay: 1024 ** 3,
        maxDownloads: 32,
        maxDownloadsPerKey: 8,
        maxDownloadsPerUser: 16,
        idleTimeoutMs: 30000,
        minUploadBytesPerSecond: 1024,
        staleUploadMs: 3_600_000,
        uploadSweepIntervalMs: 600_000,
        transferPort: 0,
        transferHost: undefined,
      },
      services: [...SERVICE_NAMES],
      logLevel: 'info',
      logFormat: 'json',
      quota: { limit: 600, windowSeconds: 60 },
      authFailures: { limit: 30, windowSeconds: 60 },
      pageRequests: { limit: 600, windowSeconds: 60 },
      trustProxyHops: 0,
      tracking: {
        refreshMs: 5000,
        heartbeatMs: 15000,
        maxStreams: 2000,
        maxStreamsPerAddress: 50,
        streamLifetimeMs: 1800000,
      },
      apiKeyCacheSeconds: 5,
      courierTokenCacheSeconds: 60,
      courierQuota: { limit: 300, windowSeconds: 60 },
      courierPositions: { onlineMs: 120000, flushMs: 10000 },
      bodyLimit: '256kb',
      requestTimeoutMs: 15000,
      httpKeepAliveMs: 65000,
      stopGraceMs: 20000,
      backfillAfterRolloutMs: 1800000,
      background: true,
      opsPort: 9464,
      routing: {
        osrmUrl: undefined,
        osrmProfile: 'driving',
        osrmTimeoutMs: 2000,
        osrmFailureThreshold: 5,
        osrmMaxAnswerBytes: 65536,
        osrmCoolDownMs: 30000,
        circuity: 1.3,
      },
      quotes: { secret: expect.any(String), ttlMs: 900_000 },
      geocoder: {
        url: undefined,
        timeoutMs: 2000,
        countryCodes: undefined,
        failureThreshold: 5,
        coolDownMs: 30000,
        maxAnswerBytes: 65536,
        cacheMs: 3600000,
        cacheEntries: 5000,
      },
      payment: {
        provider: 'sandbox',
        publicBaseUrl: 'http://localhost:3000',
        paystack: { baseUrl: 'https://api.paystack.co', secretKey: undefined, timeoutMs: 10000 },
        checkoutTtlMs: 30 * 60_000,
        sweepIntervalMs: 10000,
        eventRetryMs: 30000,
        lateChecksMs: [3_600_000, 21_600_000, 86_400_000, 259_200_000],
      },
      order: {
        sweepIntervalMs: 10000,
        staleRequestMs: 120000,
        // Staging's fixed key: as long and as free of whitespace as a key that is set.
        proofCodeSecret: expect.stringMatching(/^\S{32,}$/),
        fault: undefined,
        scheduledSearchLeadMs: 2_700_000,
      },
      notifications: {
        publicBaseUrl: 'http://localhost:3000',
        smtpUrl: undefined,
        smtpRequireTls: false,
        mailFrom: 'Waybill <no-reply@waybill.local>',
        sms: {
          provider: 'log',
          termii: {
            baseUrl: 'https://api.ng.termii.com',
            apiKey: undefined,
            senderId: undefined,
            channel: 'dnd',
          },
        },
        intervalMs: 2000,
        concurrency: 8,
        timeoutMs: 10000,
        retry: { maxAttempts: 8, baseDelayMs: 10000, maxDelayMs: 600000 },
      },
      matching: {
        offerTimeoutMs: 30000,
        searchTimeoutMs: 900000,
        reaskAfterMs: 1800000,
        reach: { startKm: 3, stepKm: 3, maxKm: 15, widenEveryMs: 60000 },
        sweepIntervalMs: 1000,
        idleStepMaxMs: 8000,
        simulatorTimeScale: 60,
        cashLimitKobo: 20_000_000,
      },
      webhook: {
        secretKey: 'waybill-staging-webhook-secret-key',
        allowPrivateTargets: false,
        deniedTargets: [],
        maxEndpoints: 10,
        retentionIntervalMs: 60000,
        retentionMs: 30 * 86_400_000,
        timeoutMs: 10000,
        retryWindowMs: 86400000,
        disableAfterMs: 86400000,
        backoffBaseMs: 10000,
        backoffMaxMs: 3600000,
        dispatchIntervalMs: 500,
        concurrency: 32,
      },
    });
  });

  it('ignores variables it does not know', () => {
    expect(loadConfig({ PATH: '/usr/bin', HOME: '/root', SOMETHING_ELSE: 'x' })).toEqual(config);
  });
});

describe('loadConfig conversions', () => {
  it('converts numeric variables from strings to numbers', () => {
    const config = loadConfig({
      PORT: '8080',
      QUOTA_LIMIT: '100',
      QUOTA_WINDOW_SECONDS: '3600',
      API_KEY_CACHE_SECONDS: '0.5',
      REQUEST_TIMEOUT_MS: '2500',
      MONGO_TIMEOUT_MS: '1500',
      OPS_PORT: '0',
      AUTH_FAILURE_LIMIT: '5',
      AUTH_FAILURE_WINDOW_SECONDS: '600',
      TRUST_PROXY_HOPS: '2',
      COURIER_TOKEN_CACHE_SECONDS: '1.5',
      COURIER_ONLINE_MS: '30000',
      COURIER_LOCATION_FLUSH_MS: '500',
      STOP_GRACE_MS: '25000',
      TRACKING_STREAM_LIFETIME_MS: '600000',
    });
    expect(config.port).toBe(8080);
    expect(config.stopGraceMs).toBe(25000);
    expect(config.tracking.streamLifetimeMs).toBe(600000);
    expect(config.courierTokenCacheSeconds).toBe(1.5);
    expect(config.courierPositions).toEqual({ onlineMs: 30000, flushMs: 500 });
    expect(config.quota).toEqual({ limit: 100, windowSeconds: 3600 });
    expect(config.authFailures).toEqual({ limit: 5, windowSeconds: 600 });
    expect(config.trustProxyHops).toBe(2);
    expect(config.apiKeyCacheSeconds).toBe(0.5);
    expect(config.requestTimeoutMs).toBe(2500);
    expect(config.mongoTimeoutMs).toBe(1500);
    expect(config.opsPort).toBe(0);
  });

  it('passes string variables through', () => {
    const config = loadConfig({
      HOST: 'localhost',
      ...LIVE,
      PAYSTACK_SECRET_KEY: 'sk_live_x',
      API_KEY_PREFIX: 'acme2',
      MONGO_URL: 'mongodb+srv://db.example.com',
      MONGO_DB_PREFIX: 'test_',
      NATS_URL: 'nats://nats:4222',
      NAMESPACE: 'ci-42',
      NODE_ID: 'node-1',
      REDIS_URL: 'rediss://cache:6380',
      S3_ENDPOINT: 'https://s3.example.com',
      S3_REGION: 'eu-west-1',
      S3_BUCKET: 'my.bucket-1',
      S3_ACCESS_KEY_ID: 'AKIA',
      S3_SECRET_ACCESS_KEY: 'secret',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'pretty',
      BODY_LIMIT: '512KB',
    });
    expect(config).toMatchObject({
      host: 'localhost',
      appEnv: 'live',
      adminToken: ADMIN_TOKEN,
      apiKeyPrefix: 'acme2',
      mongoUrl: 'mongodb+srv://db.example.com',
      mongoDbPrefix: 'test_',
      natsUrl: 'nats://nats:4222',
      namespace: 'ci-42',
      nodeId: 'node-1',
      redisUrl: 'rediss://cache:6380',
      s3: {
        endpoint: 'https://s3.example.com',
        region: 'eu-west-1',
        bucket: 'my.bucket-1',
        accessKeyId: 'AKIA',
        secretAccessKey: 'secret',
      },
      logLevel: 'debug',
      logFormat: 'pretty',
      bodyLimit: '512KB',
    });
  });

  it.each(['NATS_URL', 'NODE_ID', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'])(
    'treats an empty %s as unset',
    (name) => {
      expect(() => loadConfig({ [name]: '' })).not.toThrow();
    },
  );

  it('maps empty optional variables to undefined', () => {
    const config = loadConfig({
      NATS_URL: '',
      NODE_ID: '',
      S3_ACCESS_KEY_ID: '',
      S3_SECRET_ACCESS_KEY: '',
    });
    expect(config.natsUrl).toBeUndefined();
    expect(config.nodeId).toBeUndefined();
    expect(config.s3.accessKeyId).toBeUndefined();
    expect(config.s3.secretAccessKey).toBeUndefined();
  });

  it.each([
    ['https://cdn.example.com/', 'https://cdn.example.com'],
    ['https://cdn.example.com///', 'https://cdn.example.com'],
    ['https://cdn.example.com/files/', 'https://cdn.example.com/files'],
    ['http://cdn.example.com/files', 'http://cdn.example.com/files'],
  ])('strips trailing slashes of CDN_BASE_URL %s', (value, expected) => {
    expect(loadConfig({ CDN_BASE_URL: value }).cdnBaseUrl).toBe(expected);
  });
});

describe('file settings', () => {
  it('converts FILE_MAX_BYTES, S3_TIMEOUT_MS and FILE_TIMEOUT_MS to numbers', () => {
    const config = loadConfig({
      FILE_MAX_BYTES: '1048576',
      S3_TIMEOUT_MS: '2500',
      FILE_TIMEOUT_MS: '60000',
    });
    expect(config.files.maxBytes).toBe(1048576);
    expect(config.s3.timeoutMs).toBe(2500);
    expect(config.files.timeoutMs).toBe(60000);
  });

  it('converts the upload caps and the idle timeout to numbers', () => {
    const config = loadConfig({
      FILE_MAX_UPLOADS: '3',
      FILE_MAX_UPLOADS_PER_KEY: '2',
      FILE_IDLE_TIMEOUT_MS: '1500',
    });
    expect(config.files).toMatchObject({ maxUploads: 3, maxUploadsPerKey: 2, idleTimeoutMs: 1500 });
  });

  it('reads FILE_ALLOWED_TYPES as a list: trimmed, lower-cased, without repeats', () => {
    const config = loadConfig({ FILE_ALLOWED_TYPES: ' image/PNG, application/pdf,image/png,, ' });
    expect(config.files.allowedTypes).toEqual(['image/png', 'application/pdf']);
  });

  it('accepts every type the file service can recognise', () => {
    const config = loadConfig({ FILE_ALLOWED_TYPES: SNIFFABLE_TYPES.join(',') });
    expect(config.files.allowedTypes).toEqual([...SNIFFABLE_TYPES]);
  });

  it('names the types to choose from when one is unknown', () => {
    expect(() => loadConfig({ FILE_ALLOWED_TYPES: 'text/html' })).toThrow(
      /^FILE_ALLOWED_TYPES: .*image\/jpeg/,
    );
  });
});

describe('webhook targets kept out', () => {
  it('reads WEBHOOK_DENY_CIDRS as a list, and refuses what is no address or range', () => {
    const config = loadConfig({
      WEBHOOK_DENY_CIDRS: ' 203.0.113.0/24, ,2a05:d014::/32,198.51.100.7 ',
    });
    expect(config.webhook.deniedTargets).toEqual([
      '203.0.113.0/24',
      '2a05:d014::/32',
      '198.51.100.7',
    ]);
    expect(configErrorFor({ WEBHOOK_DENY_CIDRS: '203.0.113.0/24,example.com' }).message).toMatch(
      /WEBHOOK_DENY_CIDRS.*not an address or range: example\.com; give e\.g\. 203\.0\.113\.0\/24/,
    );
  });
});

describe('loadConfig errors', () => {
  it('never quotes a secret it refuses (one stored with a stray newline)', () => {
    const secrets = {
      ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789\n',
      WEBHOOK_SECRET_KEY: `${WEBHOOK_SECRET_KEY} \n`,
      PAYSTACK_SECRET_KEY: 'sk_test_0123456789abcdef\n',
    };
    for (const [name, value] of Object.entries(secrets)) {
      const { message } = configErrorFor({ [name]: value });
      expect(message).toMatch(new RegExp(`^${name}: "${name}" does not match the no whitespace`));
      expect(message).not.toContain(value.trim());
    }
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['HOST', 'not a host!'],
    ['APP_ENV', 'production'],
    ['API_KEY_PREFIX', 'WB'],
    ['API_KEY_PREFIX', '1wb'],
    ['API_KEY_PREFIX', 'a_b'],
    ['API_KEY_PREFIX', 'abcdefghijklmnopq'],
    ['ADMIN_TOKEN', 'too-short'],
    ['ADMIN_TOKEN', 'wbo_an-operator-token-shape-0123456789'],
    ['MONGO_URL', 'postgres://db:5432'],
    ['MONGO_DB_PREFIX', 'waybill-'],
    ['NATS_URL', 'http://nats:4222'],
    ['NAMESPACE', 'Upper_Case'],
    ['REDIS_URL', 'http://redis'],
    ['S3_ENDPOINT', 'ftp://s3'],
    ['S3_BUCKET', 'UPPER'],
    ['CDN_BASE_URL', 'not a url'],
    ['CDN_BASE_URL', 'ftp://cdn.example.com'],
    ['CDN_BASE_URL', `https://cdn.example.com/${'a'.repeat(403)}`],
    ['CDN_BASE_URL', 'https://cdn.example.com/media%20files'],
    ['LOG_LEVEL', 'verbose'],
    ['LOG_FORMAT', 'xml'],
    ['QUOTA_LIMIT', '0'],
    ['QUOTA_LIMIT', '1.5'],
    ['QUOTA_WINDOW_SECONDS', '86401'],
    ['AUTH_FAILURE_LIMIT', '0'],
    ['AUTH_FAILURE_LIMIT', '2.5'],
    ['AUTH_FAILURE_WINDOW_SECONDS', '0'],
    ['AUTH_FAILURE_WINDOW_SECONDS', '86401'],
    ['PAGE_REQUEST_LIMIT', '0'],
    ['PAGE_REQUEST_WINDOW_SECONDS', '86401'],
    ['TRUST_PROXY_HOPS', '-1'],
    ['TRUST_PROXY_HOPS', '11'],
    ['TRUST_PROXY_HOPS', 'true'],
    ['API_KEY_CACHE_SECONDS', '61'],
    ['API_KEY_CACHE_SECONDS', '-1'],
    ['COURIER_TOKEN_CACHE_SECONDS', '601'],
    ['COURIER_TOKEN_CACHE_SECONDS', '-1'],
    ['COURIER_ONLINE_MS', '999'],
    ['COURIER_ONLINE_MS', '1.5'],
    ['COURIER_LOCATION_FLUSH_MS', '99'],
    ['BODY_LIMIT', '256'],
    ['BODY_LIMIT', '1gb'],
    ['BODY_LIMIT', '1mb'],
    ['BODY_LIMIT', '786433b'],
    ['REQUEST_TIMEOUT_MS', '99'],
    ['STOP_GRACE_MS', '999'],
    ['STOP_GRACE_MS', '2147483648'],
    ['STOP_GRACE_MS', '1.5'],
    ['TRACKING_STREAM_LIFETIME_MS', '999'],
    ['TRACKING_STREAM_LIFETIME_MS', '2147483648'],
    ['BACKFILL_AFTER_ROLLOUT_MS', '999'],
    ['BACKFILL_AFTER_ROLLOUT_MS', '2147483648'],
    ['S3_TIMEOUT_MS', '99'],
    ['MONGO_TIMEOUT_MS', '99'],
    ['MONGO_TIMEOUT_MS', '10001'],
    ['REDIS_COMMAND_TIMEOUT_MS', '99'],
    ['REDIS_COMMAND_TIMEOUT_MS', '60001'],
    ['REDIS_COMMAND_TIMEOUT_MS', '1.5'],
    ['FILE_MAX_BYTES', '0'],
    ['FILE_MAX_BYTES', '1.5'],
    ['FILE_ALLOWED_TYPES', 'image/png,text/html'],
    ['FILE_ALLOWED_TYPES', 'image/svg+xml'],
    ['FILE_ALLOWED_TYPES', ' , '],
    ['FILE_TIMEOUT_MS', '999'],
    ['FILE_MAX_UPLOADS', '0'],
    ['FILE_MAX_UPLOADS', '2.5'],
    ['FILE_MAX_UPLOADS_PER_KEY', '0'],
    ['FILE_IDLE_TIMEOUT_MS', '999'],
    ['FILE_TRANSFER_PORT', '70000'],
    ['FILE_TRANSFER_HOST', 'not a host!'],
    ['OPS_PORT', '65536'],
    ['SERVICES', ''],
  ])('a bad %s (%j) throws a ConfigError naming it', (name, value) => {
    const err = configErrorFor({ [name]: value });
    expect(err.name).toBe('ConfigError');
    expect(err.message.startsWith(`${name}: `)).toBe(true);
  });

  it('names the first bad variable, in schema order, when several are bad', () => {
    const err = configErrorFor({ APP_ENV: 'production', PORT: 'abc' });
    expect(err.message).toMatch(/^PORT: /);
  });

  it('requires ADMIN_TOKEN of a live gateway', () => {
    const err = configErrorFor({ ...LIVE, ADMIN_TOKEN: '', SERVICES: 'gateway' });
    expect(err.message).toMatch(/^ADMIN_TOKEN: required when APP_ENV=live by gateway/);
  });

  it('requires an https PUBLIC_BASE_URL when live: links to people start with it', () => {
    const without: NodeJS.ProcessEnv = { ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' };
    delete without.PUBLIC_BASE_URL;
    expect(configErrorFor(without).message).toMatch(/^PUBLIC_BASE_URL: .*required/);
    expect(
      configErrorFor({ ...without, PUBLIC_BASE_URL: 'http://api.waybill.example' }).message,
    ).toMatch(/^PUBLIC_BASE_URL: /);
    expect(
      loadConfig({ ...without, PUBLIC_BASE_URL: 'https://api.waybill.example/' }).payment
        .publicBaseUrl,
    ).toBe('https://api.waybill.example');
  });

  it('refuses the example addresses in every environment: a staging copy texts real people too', () => {
    for (const name of ['PUBLIC_BASE_URL', 'CDN_BASE_URL', 'S3_ENDPOINT']) {
      expect(configErrorFor({ [name]: 'https://REPLACE-ME.example.com' }).message).toMatch(
        new RegExp(`^${name}: still holds the example's REPLACE-ME`),
      );
    }
    expect(configErrorFor({ MAIL_FROM: 'Waybill <a@REPLACE-ME.example.com>' }).message).toMatch(
      /^MAIL_FROM: still holds/,
    );
  });

  it('refuses a PUBLIC_BASE_URL with a query string or fragment: links are built by appending paths', () => {
    expect(configErrorFor({ PUBLIC_BASE_URL: 'https://a.example/?x=1' }).message).toMatch(
      /^PUBLIC_BASE_URL: .*no query string or fragment/,
    );
    expect(configErrorFor({ PUBLIC_BASE_URL: 'https://a.example#x' }).message).toMatch(
      /^PUBLIC_BASE_URL: /,
    );
  });

  it('accepts APP_ENV=live with an ADMIN_TOKEN', () => {
    const config = loadConfig({ ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' });
    expect(config.appEnv).toBe('live');
    expect(config.adminToken).toBe(ADMIN_TOKEN);
  });

  it('leaves ADMIN_TOKEN optional in staging', () => {
    expect(loadConfig({ APP_ENV: 'staging' }).adminToken).toBeUndefined();
  });
});

describe('payment', () => {
  it('checks out with the sandbox in staging and with Paystack in live', () => {
    expect(loadConfig({}).payment.provider).toBe('sandbox');
    const live = loadConfig({ ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' });
    expect(live.payment.provider).toBe('paystack');
    expect(live.payment.paystack.secretKey).toBe('sk_live_x');
  });

  it('requires the Paystack secret key wherever Paystack is the provider', () => {
    expect(configErrorFor(LIVE).message).toMatch(
      /^PAYSTACK_SECRET_KEY: required by payment with PAYMENT_PROVIDER=paystack/,
    );
    expect(configErrorFor({ PAYMENT_PROVIDER: 'paystack' }).message).toMatch(
      /^PAYSTACK_SECRET_KEY: /,
    );
  });

  it('refuses a provider reached over plain http when live: the secret key rides every call', () => {
    const env = {
      ...LIVE,
      PAYSTACK_SECRET_KEY: 'sk_live_x',
      PAYSTACK_BASE_URL: 'http://api.example',
    };
    expect(configErrorFor(env).message).toMatch(/^PAYSTACK_BASE_URL: must be https:\/\/ when live/);
  });

  it('refuses the sandbox live: its page pays any checkout without money', () => {
    const env = { ...LIVE, PAYMENT_PROVIDER: 'sandbox', PAYSTACK_SECRET_KEY: 'sk_live_x' };
    expect(configErrorFor(env).message).toMatch(/^PAYMENT_PROVIDER: `sandbox` takes no money/);
  });

  it('links to the public URL without its trailing slash, the gateway port by default', () => {
    expect(loadConfig({ PORT: '8080' }).payment.publicBaseUrl).toBe('http://localhost:8080');
    const config = loadConfig({
      PUBLIC_BASE_URL: 'https://pay.example.com/',
      PAYSTACK_BASE_URL: 'http://127.0.0.1:9999/',
    });
    expect(config.payment.publicBaseUrl).toBe('https://pay.example.com');
    expect(config.payment.paystack.baseUrl).toBe('http://127.0.0.1:9999');
  });

  it('takes the checkout time limit in seconds when given so, else in minutes', () => {
    expect(loadConfig({ CHECKOUT_TTL_MINUTES: '5' }).payment.checkoutTtlMs).toBe(300_000);
    const both = loadConfig({ CHECKOUT_TTL_MINUTES: '5', CHECKOUT_TTL_SECONDS: '2' });
    expect(both.payment.checkoutTtlMs).toBe(2_000);
  });

  it('takes the webhook retention in milliseconds when given so, else in days', () => {
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: '7' }).webhook.retentionMs).toBe(7 * 86_400_000);
    const both = loadConfig({ WEBHOOK_RETENTION_DAYS: '7', WEBHOOK_RETENTION_MS: '3000' });
    expect(both.webhook.retentionMs).toBe(3_000);
    expect(configErrorFor({ WEBHOOK_RETENTION_DAYS: '0' }).message).toMatch(
      /^WEBHOOK_RETENTION_DAYS: /,
    );
  });

  it('refuses an unknown provider and a URL that is not http(s)', () => {
    expect(configErrorFor({ PAYMENT_PROVIDER: 'stripe' }).message).toMatch(/^PAYMENT_PROVIDER: /);
    expect(configErrorFor({ PUBLIC_BASE_URL: 'ftp://x' }).message).toMatch(/^PUBLIC_BASE_URL: /);
  });
});

describe('notifications', () => {
  it('sends through SMTP and Termii live, each as configured', () => {
    const config = loadConfig({
      ...LIVE,
      PAYSTACK_SECRET_KEY: 'sk_live_x',
      PUBLIC_BASE_URL: 'https://api.example.com/',
      TERMII_BASE_URL: 'https://v3.api.termii.com/',
      NOTIFY_MAX_ATTEMPTS: '3',
      NOTIFY_RETRY_BASE_MS: '500',
      NOTIFY_RETRY_MAX_MS: '2000',
    }).notifications;
    expect(config).toMatchObject({
      publicBaseUrl: 'https://api.example.com',
      smtpUrl: LIVE_NOTIFY.SMTP_URL,
      smtpRequireTls: true,
      mailFrom: LIVE_NOTIFY.MAIL_FROM,
      sms: {
        provider: 'termii',
        termii: { baseUrl: 'https://v3.api.termii.com', apiKey: 'termii-key', senderId: 'Waybill' },
      },
      retry: { maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 2000 },
    });
    // Codes and links go on the transactional route unless the operator says otherwise.
    expect(config.sms.termii.channel).toBe('dnd');
    const generic = { ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x', TERMII_CHANNEL: 'generic' };
    expect(loadConfig(generic).notifications.sms.termii.channel).toBe('generic');
    expect(configErrorFor({ ...generic, TERMII_CHANNEL: 'whatsapp' }).message).toMatch(
      /^TERMII_CHANNEL: .*must be one of \[dnd, generic\]/,
    );
    // The API key and every code ride on it: never in clear, live.
    expect(
      configErrorFor({ ...generic, TERMII_BASE_URL: 'http://api.ng.termii.com' }).message,
    ).toMatch(/^TERMII_BASE_URL: must be https:\/\/ when live, unless on this host/);
    // A proxy on this host, or a relay: nothing on the way to read them.
    const local = {
      ...generic,
      TERMII_BASE_URL: 'http://127.0.0.1:8080',
      SMTP_URL: 'smtp://user:pass@localhost:25',
    };
    expect(loadConfig(local).notifications).toMatchObject({ smtpRequireTls: false });
  });

  it.each([
    ['SMTP_URL', /^SMTP_URL: required when APP_ENV=live by order and webhook.*smtps:\/\//],
    ['MAIL_FROM', /^MAIL_FROM: required when APP_ENV=live by order and webhook/],
    [
      'TERMII_API_KEY',
      /^TERMII_API_KEY: required by order and webhook with SMS_PROVIDER=termii.*TERMII_SENDER_ID/,
    ],
    [
      'TERMII_SENDER_ID',
      /^TERMII_SENDER_ID: required by order and webhook with SMS_PROVIDER=termii/,
    ],
  ])('refuses to start live without %s, saying what to set', (variable, message) => {
    const env = { ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x', [variable]: '' };
    expect(configErrorFor(env).message).toMatch(message);
  });

  it('refuses the log sink live: it reaches nobody', () => {
    const env = { ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x', SMS_PROVIDER: 'log' };
    expect(configErrorFor(env).message).toMatch(/^SMS_PROVIDER: .*SMS_PROVIDER=termii/);
  });

  it('requires Termii credentials in staging too when Termii is chosen', () => {
    expect(configErrorFor({ SMS_PROVIDER: 'termii' }).message).toMatch(/^TERMII_API_KEY: /);
  });

  it.each([
    ['SMTP_URL', 'http://smtp.example.com'],
    ['SMS_PROVIDER', 'twilio'],
    ['TERMII_SENDER_ID', 'a sender id that is too long'],
    ['NOTIFY_MAX_ATTEMPTS', '0'],
  ])('refuses a bad %s', (variable, value) => {
    expect(configErrorFor({ [variable]: value }).message).toMatch(new RegExp(`^${variable}: `));
  });

  it('refuses a longest wait shorter than the first', () => {
    const err = configErrorFor({ NOTIFY_RETRY_BASE_MS: '5000', NOTIFY_RETRY_MAX_MS: '1000' });
    expect(err.message).toMatch(/^NOTIFY_RETRY_MAX_MS: .*NOTIFY_RETRY_BASE_MS \(5000\)/);
    const webhook = configErrorFor({
      WEBHOOK_BACKOFF_BASE_MS: '60000',
      WEBHOOK_BACKOFF_MAX_MS: '1000',
    });
    expect(webhook.message).toBe(
      'WEBHOOK_BACKOFF_MAX_MS: must be at least WEBHOOK_BACKOFF_BASE_MS (60000); raise it',
    );
  });
});

describe('matching', () => {
  it('refuses a search radius that would grow past the widest search for couriers', () => {
    expect(configErrorFor({ MATCHING_RADIUS_KM: '3,3,150' }).message).toBe(
      'MATCHING_RADIUS_KM: max must be at most 100 km, the widest search for couriers, got 3,3,150',
    );
    expect(loadConfig({ MATCHING_RADIUS_KM: '3,3,100' }).matching.reach).toMatchObject({
      startKm: 3,
      stepKm: 3,
      maxKm: 100,
    });
  });
});

describe('the stop', () => {
  it('refuses a stop grace a call may outlast: the stop would cut requests it should let finish', () => {
    expect(configErrorFor({ REQUEST_TIMEOUT_MS: '30000' }).message).toMatch(
      /^STOP_GRACE_MS: must be longer than REQUEST_TIMEOUT_MS \(30000\), or a stop cuts requests still under way; raise it/,
    );
    expect(configErrorFor({ STOP_GRACE_MS: '5000', REQUEST_TIMEOUT_MS: '5000' }).message).toMatch(
      /^STOP_GRACE_MS: /,
    );
    expect(loadConfig({ STOP_GRACE_MS: '5001', REQUEST_TIMEOUT_MS: '5000' }).stopGraceMs).toBe(
      5001,
    );
  });
});

describe('order', () => {
  it('converts the sweep interval and the stale-request age to numbers', () => {
    const config = loadConfig({ ORDER_SWEEP_INTERVAL_MS: '500', ORDER_STALE_REQUEST_MS: '60000' });
    expect(config.order).toMatchObject({ sweepIntervalMs: 500, staleRequestMs: 60000 });
  });

  it('refuses a stale-request age the request timeout reaches: the sweep would undo live requests', () => {
    const longStop = { STOP_GRACE_MS: '190000' };
    const err = configErrorFor({
      ...longStop,
      REQUEST_TIMEOUT_MS: '180000',
      ORDER_STALE_REQUEST_MS: '120000',
    });
    expect(err.message).toMatch(/^ORDER_STALE_REQUEST_MS: .*REQUEST_TIMEOUT_MS \(180000\)/);
    expect(
      configErrorFor({
        ...longStop,
        REQUEST_TIMEOUT_MS: '120000',
        ORDER_STALE_REQUEST_MS: '120000',
      }).message,
    ).toMatch(/^ORDER_STALE_REQUEST_MS: /);
    const config = loadConfig({
      ...longStop,
      REQUEST_TIMEOUT_MS: '180000',
      ORDER_STALE_REQUEST_MS: '180001',
    });
    expect(config.order.staleRequestMs).toBe(180001);
  });

  it('refuses a stale-upload age an upload may still reach: the sweep would abort live uploads', () => {
    expect(loadConfig({}).files).toMatchObject({
      staleUploadMs: 3_600_000,
      uploadSweepIntervalMs: 600_000,
    });
    // The body's FILE_TIMEOUT_MS, then its last writes: three S3 requests, each tried twice.
    const live = { FILE_TIMEOUT_MS: '120000', S3_TIMEOUT_MS: '10000' };
    const err = configErrorFor({ ...live, FILE_STALE_UPLOAD_MS: '180000' });
    expect(err.message).toMatch(
      /^FILE_STALE_UPLOAD_MS: must be longer than FILE_TIMEOUT_MS and six S3_TIMEOUT_MS \(180000\)/,
    );
    expect(loadConfig({ ...live, FILE_STALE_UPLOAD_MS: '180001' }).files.staleUploadMs).toBe(
      180001,
    );
  });

  it('requires WEBHOOK_SECRET_KEY when live, and never allows private webhook targets there', () => {
    expect(
      configErrorFor({ ...LIVE, WEBHOOK_SECRET_KEY: '', PAYSTACK_SECRET_KEY: 'sk_live_x' }).message,
    ).toMatch(/^WEBHOOK_SECRET_KEY: .*required/);
    const config = loadConfig({ ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' });
    expect(config.webhook.secretKey).toBe(WEBHOOK_SECRET_KEY);
    expect(
      configErrorFor({
        ...LIVE,
        PAYSTACK_SECRET_KEY: 'sk_live_x',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      }).message,
    ).toMatch(/^WEBHOOK_ALLOW_PRIVATE_TARGETS: /);
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).webhook.allowPrivateTargets).toBe(
      true,
    );
  });

  it('requires PROOF_CODE_SECRET when live, and uses the one given', () => {
    const err = configErrorFor({
      ...LIVE,
      PROOF_CODE_SECRET: '',
      PAYSTACK_SECRET_KEY: 'sk_live_x',
    });
    expect(err.message).toMatch(/^PROOF_CODE_SECRET: .*required/);
    const config = loadConfig({ ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' });
    expect(config.order.proofCodeSecret).toBe(PROOF_CODE_SECRET);
  });

  it.each([
    ['', /empty/],
    ['1,2,3,4,5,6,7,8,9,10,11', /1 to 10 delays/],
    ['3600000,abc', /whole number/],
    ['50', /whole number/],
    ['604800001', /7 days/],
    ['600000,300000', /increasing/],
  ])('refuses CHECKOUT_LATE_CHECKS_MS=%j', (value, message) => {
    expect(configErrorFor({ CHECKOUT_LATE_CHECKS_MS: value }).message).toMatch(message);
  });

  it('signs quotes under QUOTE_SECRET, else under a key derived from PROOF_CODE_SECRET', () => {
    const live = { ...LIVE, PAYSTACK_SECRET_KEY: 'sk_live_x' };
    const config = loadConfig({ ...live, QUOTE_TTL_MS: '60000' });
    expect(config.quotes).toEqual({ secret: QUOTE_SECRET, ttlMs: 60_000 });
    // Live starts without it (no new Secret before an upgrade), on a key that is neither
    // the proof codes' nor the same for another PROOF_CODE_SECRET.
    const derived = loadConfig({ ...live, QUOTE_SECRET: undefined }).quotes.secret;
    expect(derived).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(derived).not.toBe(PROOF_CODE_SECRET);
    const other = { ...live, QUOTE_SECRET: undefined, PROOF_CODE_SECRET: `${PROOF_CODE_SECRET}!` };
    expect(loadConfig(other).quotes.secret).not.toBe(derived);
    expect(configErrorFor({ QUOTE_SECRET: 'a'.repeat(31) }).message).toMatch(/^QUOTE_SECRET: /);
    expect(configErrorFor({ QUOTE_TTL_MS: '59999' }).message).toMatch(/^QUOTE_TTL_MS: /);
    expect(configErrorFor({ QUOTE_TTL_MS: '3600001' }).message).toMatch(/^QUOTE_TTL_MS: /);
  });

  it('treats an empty PROOF_CODE_SECRET as unset: the staging key, but refused live', () => {
    expect(loadConfig({ PROOF_CODE_SECRET: '' }).order.proofCodeSecret).toBe(
      loadConfig({}).order.proofCodeSecret,
    );
    expect(configErrorFor({ ...LIVE, PROOF_CODE_SECRET: '' }).message).toMatch(
      /^PROOF_CODE_SECRET: .*required/,
    );
  });

  it.each([
    ['31 characters', 'a'.repeat(31)],
    ['whitespace', `${'a'.repeat(16)} ${'a'.repeat(16)}`],
  ])('refuses a PROOF_CODE_SECRET with %s', (_why, value) => {
    expect(configErrorFor({ PROOF_CODE_SECRET: value }).message).toMatch(/^PROOF_CODE_SECRET: /);
  });

  it('honours ORDER_FAULT under tests only', () => {
    expect(loadConfig({ NODE_ENV: 'test', ORDER_FAULT: 'after-ready' }).order.fault).toBe(
      'after-ready',
    );
    expect(loadConfig({ NODE_ENV: 'test', ORDER_FAULT: '' }).order.fault).toBeUndefined();
    for (const NODE_ENV of ['production', 'development', undefined]) {
      const err = configErrorFor({ NODE_ENV, ORDER_FAULT: 'after-ready' });
      expect(err.message).toMatch(/^ORDER_FAULT: .*NODE_ENV=test.*unset it/);
    }
  });

  it('refuses an unknown ORDER_FAULT point, naming the variable', () => {
    const err = configErrorFor({ NODE_ENV: 'test', ORDER_FAULT: 'after-lunch' });
    expect(err.message).toMatch(/^ORDER_FAULT: /);
  });

  it.each([
    ['ORDER_SWEEP_INTERVAL_MS', '99'],
    ['ORDER_SWEEP_INTERVAL_MS', '1.5'],
    ['ORDER_STALE_REQUEST_MS', '999'],
  ])('a bad %s (%j) throws a ConfigError naming it', (name, value) => {
    expect(configErrorFor({ [name]: value }).message).toMatch(new RegExp(`^${name}: `));
  });
});

describe('SERVICES', () => {
  it.each([
    ['all', [...SERVICE_NAMES]],
    ['gateway', ['gateway']],
    ['account', ['account']],
    ['gateway,account', ['gateway', 'account']],
    ['courier-matching', ['courier-matching']],
    ['account,gateway', ['account', 'gateway']],
    [' gateway , account ', ['gateway', 'account']],
    ['gateway,,account,', ['gateway', 'account']],
    ['gateway,gateway', ['gateway']],
    ['gateway,all', [...SERVICE_NAMES]],
    [',', [...SERVICE_NAMES]],
  ])('%j runs %j', (value, expected) => {
    expect(loadConfig({ SERVICES: value }).services).toEqual(expected);
  });

  it('returns a fresh array each time, not the shared SERVICE_NAMES', () => {
    const services = loadConfig({}).services;
    expect(services).toEqual([...SERVICE_NAMES]);
    expect(services).not.toBe(SERVICE_NAMES);
  });

  it('rejects an unknown service, naming SERVICES, the unknown names and the choices', () => {
    const err = configErrorFor({ SERVICES: 'gateway,billing,courier' });
    expect(err.message).toMatch(/^SERVICES: /);
    expect(err.message).toContain('billing, courier');
    expect(err.message).toContain('all, gateway, account');
  });
});

describe("live's keys, by the services that read them", () => {
  /** Live's settings that are not secrets (the ConfigMap's), and each key of the Secret. */
  const settings = {
    APP_ENV: 'live',
    PUBLIC_BASE_URL: LIVE.PUBLIC_BASE_URL,
    MAIL_FROM: LIVE_NOTIFY.MAIL_FROM,
    TERMII_SENDER_ID: LIVE_NOTIFY.TERMII_SENDER_ID,
  };
  const secret: Record<SecretName, string> = {
    ADMIN_TOKEN,
    MONGO_URL: 'mongodb://waybill:pw@mongo.internal:27017',
    REDIS_URL: 'redis://:pw@redis.internal:6379',
    S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    S3_SECRET_ACCESS_KEY: 'an-s3-secret',
    PAYSTACK_SECRET_KEY: 'sk_live_x',
    SMTP_URL: LIVE_NOTIFY.SMTP_URL,
    TERMII_API_KEY: LIVE_NOTIFY.TERMII_API_KEY,
    PROOF_CODE_SECRET,
    QUOTE_SECRET,
    WEBHOOK_SECRET_KEY,
  };
  /** Live for `service` alone, given the Secret's keys it reads and no other. */
  const ownEnv = (service: ServiceName): NodeJS.ProcessEnv => ({
    ...settings,
    SERVICES: service,
    ...Object.fromEntries(secretsOf([service]).map((name) => [name, secret[name]])),
  });
  /** The keys `service` cannot start live without. */
  const REQUIRED: Record<ServiceName, SecretName[]> = {
    gateway: ['ADMIN_TOKEN'],
    account: [],
    geo: [],
    pricing: ['QUOTE_SECRET'],
    package: [],
    file: [],
    payment: ['PAYSTACK_SECRET_KEY'],
    order: ['SMTP_URL', 'TERMII_API_KEY', 'PROOF_CODE_SECRET'],
    'courier-matching': [],
    webhook: ['SMTP_URL', 'TERMII_API_KEY', 'WEBHOOK_SECRET_KEY'],
  };

  it.each(SERVICE_NAMES)(
    'starts %s live with its own keys, and without each required one says so',
    (service) => {
      expect(() => loadConfig(ownEnv(service))).not.toThrow();
      const required = secretsOf([service]).filter((name) => {
        try {
          loadConfig({ ...ownEnv(service), [name]: undefined });
          return false;
        } catch (err) {
          expect((err as Error).message).toMatch(
            new RegExp(`^${name}: required .*by [a-z -]*${service}`),
          );
          return true;
        }
      });
      expect(required).toEqual(REQUIRED[service]);
    },
  );

  it("reads every key in some service, and the providers' keys in those that call them", () => {
    expect(secretsOf([...SERVICE_NAMES])).toEqual(Object.keys(SECRET_READERS));
    expect(secretsOf(['geo'])).toEqual(['MONGO_URL']);
    expect(secretsOf(['gateway'])).toEqual(['ADMIN_TOKEN', 'REDIS_URL']);
    expect(secretsOf(['payment', 'file'])).toEqual([
      'MONGO_URL',
      'REDIS_URL',
      'S3_ACCESS_KEY_ID',
      'S3_SECRET_ACCESS_KEY',
      'PAYSTACK_SECRET_KEY',
    ]);
  });

  /** What in a service's code reads each key (its configuration, or the client built on it). */
  const READ_BY: Record<SecretName, RegExp> = {
    ADMIN_TOKEN: /\badminToken\b/,
    MONGO_URL: /\bServiceDatabase\b/,
    REDIS_URL: /\bconfig\.redisUrl\b/,
    // S3's settings, but for its timeout, which is no key (the gateway's transfer leases).
    S3_ACCESS_KEY_ID: /\bconfig\.s3\b(?!\.timeoutMs)/,
    S3_SECRET_ACCESS_KEY: /\bconfig\.s3\b(?!\.timeoutMs)/,
    PAYSTACK_SECRET_KEY: /\bpaystack\.secretKey\b/,
    SMTP_URL: /\bchannelSenders\(/,
    TERMII_API_KEY: /\bchannelSenders\(/,
    PROOF_CODE_SECRET: /\bproofCodeSecret\b/,
    QUOTE_SECRET: /\bconfig\.quotes\b/,
    WEBHOOK_SECRET_KEY: /\bwebhook\.secretKey\b/,
  };
  const sourceOf = (service: ServiceName) =>
    readdirSync(join(SERVICES_DIR, service), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => readFileSync(join(SERVICES_DIR, service, file), 'utf8'))
      .join('\n');

  it('gives each key to exactly the services whose code reads it', () => {
    const sources = SERVICE_NAMES.map((service) => [service, sourceOf(service)] as const);
    for (const [name, marker] of Object.entries(READ_BY) as [SecretName, RegExp][]) {
      const readers = sources
        .filter(([, source]) => marker.test(source))
        .map(([service]) => service);
      expect({ [name]: readers }).toEqual({ [name]: [...SECRET_READERS[name]] });
    }
  });

  it("signs quotes live under PROOF_CODE_SECRET's derived key when pricing has no QUOTE_SECRET", () => {
    const env = { ...ownEnv('pricing'), QUOTE_SECRET: undefined };
    const derived = loadConfig({ ...env, PROOF_CODE_SECRET }).quotes.secret;
    expect(derived).toBe(
      loadConfig({ ...LIVE, QUOTE_SECRET: '', PAYSTACK_SECRET_KEY: 'sk_live_x' }).quotes.secret,
    );
    expect(configErrorFor(env).message).toMatch(
      /^QUOTE_SECRET: required when APP_ENV=live by pricing.*unless PROOF_CODE_SECRET/,
    );
  });

  it('holds, live, a key of its own process where a key it does not read would be: used by mistake, it fails closed', () => {
    const staging = loadConfig({});
    const first = loadConfig(ownEnv('gateway'));
    const second = loadConfig(ownEnv('gateway'));
    for (const pick of [
      (c: Config) => c.order.proofCodeSecret,
      (c: Config) => c.webhook.secretKey,
      (c: Config) => c.quotes.secret,
    ]) {
      expect(pick(first)).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(pick(first)).not.toBe(pick(second));
      expect(pick(first)).not.toBe(pick(staging));
    }
  });
});

describe('describeConfig', () => {
  const described = describeConfig();
  const EXPECTED_NAMES = [
    'PORT',
    'HOST',
    'APP_ENV',
    'API_KEY_PREFIX',
    'ADMIN_TOKEN',
    'MONGO_URL',
    'MONGO_DB_PREFIX',
    'MONGO_TIMEOUT_MS',
    'DB_COMMAND_METRICS',
    'NATS_URL',
    'NAMESPACE',
    'NODE_ID',
    'REDIS_URL',
    'REDIS_COMMAND_TIMEOUT_MS',
    'S3_ENDPOINT',
    'S3_REGION',
    'S3_BUCKET',
    'S3_ACCESS_KEY_ID',
    'S3_SECRET_ACCESS_KEY',
    'S3_TIMEOUT_MS',
    'CDN_BASE_URL',
    'PACKAGE_MAX_OPEN',
    'FILE_MAX_BYTES',
    'FILE_ALLOWED_TYPES',
    'FILE_TIMEOUT_MS',
    'FILE_MAX_UPLOADS',
    'FILE_MAX_UPLOADS_PER_KEY',
    'FILE_MAX_UPLOADS_PER_USER',
    'FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY',
    'FILE_MAX_DOWNLOADS',
    'FILE_MAX_DOWNLOADS_PER_KEY',
    'FILE_MAX_DOWNLOADS_PER_USER',
    'FILE_IDLE_TIMEOUT_MS',
    'FILE_MIN_UPLOAD_BYTES_PER_SECOND',
    'FILE_STALE_UPLOAD_MS',
    'FILE_UPLOAD_SWEEP_INTERVAL_MS',
    'FILE_TRANSFER_PORT',
    'FILE_TRANSFER_HOST',
    'SERVICES',
    'LOG_LEVEL',
    'LOG_FORMAT',
    'QUOTA_LIMIT',
    'QUOTA_WINDOW_SECONDS',
    'COURIER_QUOTA_LIMIT',
    'COURIER_QUOTA_WINDOW_SECONDS',
    'AUTH_FAILURE_LIMIT',
    'AUTH_FAILURE_WINDOW_SECONDS',
    'PAGE_REQUEST_LIMIT',
    'PAGE_REQUEST_WINDOW_SECONDS',
    'TRUST_PROXY_HOPS',
    'API_KEY_CACHE_SECONDS',
    'COURIER_TOKEN_CACHE_SECONDS',
    'COURIER_ONLINE_MS',
    'COURIER_LOCATION_FLUSH_MS',
    'TRACKING_REFRESH_MS',
    'TRACKING_HEARTBEAT_MS',
    'TRACKING_MAX_STREAMS',
    'TRACKING_MAX_STREAMS_PER_ADDRESS',
    'TRACKING_STREAM_LIFETIME_MS',
    'BODY_LIMIT',
    'REQUEST_TIMEOUT_MS',
    'HTTP_KEEP_ALIVE_MS',
    'STOP_GRACE_MS',
    'BACKFILL_AFTER_ROLLOUT_MS',
    'OSRM_URL',
    'OSRM_PROFILE',
    'OSRM_TIMEOUT_MS',
    'OSRM_FAILURE_THRESHOLD',
    'OSRM_COOL_DOWN_MS',
    'OSRM_MAX_ANSWER_BYTES',
    'ROUTE_CIRCUITY',
    'QUOTE_SECRET',
    'QUOTE_TTL_MS',
    'GEOCODER_URL',
    'GEOCODER_TIMEOUT_MS',
    'GEOCODER_FAILURE_THRESHOLD',
    'GEOCODER_COOL_DOWN_MS',
    'GEOCODER_MAX_ANSWER_BYTES',
    'GEOCODER_CACHE_MS',
    'GEOCODER_CACHE_ENTRIES',
    'GEOCODER_COUNTRIES',
    'PUBLIC_BASE_URL',
    'PAYMENT_PROVIDER',
    'PAYSTACK_BASE_URL',
    'PAYSTACK_SECRET_KEY',
    'PAYSTACK_TIMEOUT_MS',
    'CHECKOUT_TTL_MINUTES',
    'CHECKOUT_TTL_SECONDS',
    'PAYMENT_SWEEP_INTERVAL_MS',
    'PAYMENT_EVENT_RETRY_MS',
    'CHECKOUT_LATE_CHECKS_MS',
    'ORDER_SWEEP_INTERVAL_MS',
    'ORDER_STALE_REQUEST_MS',
    'ORDER_SCHEDULED_SEARCH_LEAD_MS',
    'PROOF_CODE_SECRET',
    'ORDER_FAULT',
    'SMTP_URL',
    'MAIL_FROM',
    'SMS_PROVIDER',
    'TERMII_BASE_URL',
    'TERMII_API_KEY',
    'TERMII_SENDER_ID',
    'TERMII_CHANNEL',
    'NOTIFY_INTERVAL_MS',
    'NOTIFY_CONCURRENCY',
    'NOTIFY_TIMEOUT_MS',
    'NOTIFY_MAX_ATTEMPTS',
    'NOTIFY_RETRY_BASE_MS',
    'NOTIFY_RETRY_MAX_MS',
    'MATCHING_OFFER_TIMEOUT_MS',
    'MATCHING_SEARCH_TIMEOUT_MS',
    'MATCHING_REASK_AFTER_MS',
    'MATCHING_RADIUS_KM',
    'MATCHING_WIDEN_EVERY_MS',
    'MATCHING_SWEEP_INTERVAL_MS',
    'MATCHING_IDLE_STEP_MAX_MS',
    'MATCHING_COURIER_CASH_LIMIT_NAIRA',
    'SIMULATOR_TIME_SCALE',
    'WEBHOOK_SECRET_KEY',
    'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    'WEBHOOK_DENY_CIDRS',
    'WEBHOOK_MAX_ENDPOINTS',
    'WEBHOOK_TIMEOUT_MS',
    'WEBHOOK_RETRY_WINDOW_MS',
    'WEBHOOK_DISABLE_AFTER_MS',
    'WEBHOOK_BACKOFF_BASE_MS',
    'WEBHOOK_BACKOFF_MAX_MS',
    'WEBHOOK_DISPATCH_INTERVAL_MS',
    'WEBHOOK_CONCURRENCY',
    'WEBHOOK_RETENTION_DAYS',
    'WEBHOOK_RETENTION_MS',
    'WEBHOOK_RETENTION_INTERVAL_MS',
    'OPS_PORT',
  ];

  it('lists every variable once, in schema order', () => {
    expect(described.map((v) => v.name)).toEqual(EXPECTED_NAMES);
  });

  it('gives every variable a non-empty description', () => {
    for (const variable of described) {
      expect(typeof variable.description).toBe('string');
      expect(variable.description.trim()).not.toBe('');
    }
  });

  it('reports defaults as strings, empty when there is none', () => {
    const byName = Object.fromEntries(described.map((v) => [v.name, v.default]));
    expect(byName).toMatchObject({
      PORT: '3000',
      APP_ENV: 'staging',
      API_KEY_PREFIX: 'wb',
      SERVICES: 'all',
      QUOTA_LIMIT: '600',
      PACKAGE_MAX_OPEN: '400',
      ADMIN_TOKEN: '',
      NATS_URL: '',
      NODE_ID: '',
    });
    for (const variable of described) expect(typeof variable.default).toBe('string');
  });

  it('agrees with the defaults loadConfig applies', () => {
    const byName = Object.fromEntries(described.map((v) => [v.name, v.default]));
    const config = loadConfig({});
    expect(String(config.port)).toBe(byName.PORT);
    expect(config.host).toBe(byName.HOST);
    expect(config.mongoUrl).toBe(byName.MONGO_URL);
    expect(String(config.opsPort)).toBe(byName.OPS_PORT);
    expect(String(config.requestTimeoutMs)).toBe(byName.REQUEST_TIMEOUT_MS);
  });

  it('mentions the requirement of ADMIN_TOKEN in live', () => {
    const admin = described.find((v) => v.name === 'ADMIN_TOKEN');
    expect(admin?.description).toMatch(/APP_ENV=live/);
  });
});

describe('ADMIN_TOKEN edge cases', () => {
  it('treats an empty value as unset in staging', () => {
    expect(loadConfig({ ADMIN_TOKEN: '' }).adminToken).toBeUndefined();
  });

  it('refuses a token with whitespace, which no Authorization header could carry', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'has a space in it!!' })).toThrow(/^ADMIN_TOKEN: /);
  });
});
