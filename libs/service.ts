import type { AppEnvironment } from './config';
import type Joi from './joi';
import type { ActionSchema, Context, ServiceSchema } from 'moleculer';
import {
  CONTRACT_RETRY,
  type ActionName,
  type AnswerOf,
  type ParamsOf,
  type Retry,
} from './contracts';
import { unauthorized } from './errors';
import type { TransferTicket } from './transfer';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Which edge of the gateway serves an action, and how it authenticates: `api` and `file` an
 * API key, `admin` the admin token, `courier` a courier token (the courier app); `checkout`
 * (the sandbox's hosted pages), `track` (the public tracking page) and `webhooks` (a
 * provider's notifications) take no credentials: the unguessable reference or tracking id,
 * or the request's signature, is checked by the service.
 */
export type RouteGroup = 'api' | 'file' | 'admin' | 'courier' | 'checkout' | 'track' | 'webhooks';

/** How an action is exposed over HTTP. The gateway and the OpenAPI document read it. */
export interface HttpRoute {
  method: HttpMethod;
  /** Path under the group's base, moleculer-web style: `/users/:userId`. */
  path: string;
  group: RouteGroup;
  /** Success status; 204 answers an empty body. Default 200. */
  status?: 200 | 201 | 202 | 204;
  /** `message` of the success envelope. */
  message: string;
  summary: string;
  description?: string;
  /**
   * Body handling: parsed JSON (default), the raw request stream, or `raw`: the exact bytes,
   * capped, as `rawBody` (base64) with the request `headers` named below, for signatures.
   */
  body?: 'json' | 'stream' | 'raw';
  /** `body: 'raw'` routes: the request headers (lower case) the action receives in `headers`. */
  headers?: string[];
  /**
   * The answer is an HTML page (the action returns its markup), not an envelope; errors on
   * its group are HTML pages too. Pages are left out of /openapi.json.
   */
  page?: boolean;
  /** `body: 'stream'` routes: the multipart/form-data form, for the docs (JSON Schema). */
  multipart?: Record<string, unknown>;
  /** Shape of `data` in the success envelope, for the docs. */
  response?: Joi.Schema;
  /** The answer is raw bytes (`application/octet-stream`), not an envelope. */
  binary?: boolean;
  /** Extra error statuses worth documenting, with their meaning. */
  errors?: Record<number, string>;
  /**
   * Optional request headers of a few allowed values (`Waybill-Simulate`): the gateway refuses
   * any other value with 400 and hands the action the value in `meta.optionHeaders`, keyed
   * by the header's name in lower case.
   */
  optionHeaders?: OptionHeader[];
  /**
   * A creation: the path parameter (or body field) through which other routes take the
   * created resource's `data.id`, such as `userId`. The document links them (OpenAPI links).
   */
  creates?: string;
  /** The field of `data` that holds the created resource's id, when it is not `id`. */
  createdIdField?: string;
  /**
   * The body field through which other routes take a list of such ids (`packagesId`): the
   * document links the creation to them too, the created id as the list's one item.
   */
  listedAs?: string;
}

export interface OptionHeader {
  name: string;
  values: readonly string[];
  description: string;
  /**
   * Where the OpenAPI document offers it (every environment when absent). The gateway checks
   * only its values: the action refuses it elsewhere (order's `Waybill-Simulate` in live).
   */
  environments?: readonly AppEnvironment[];
}

export interface AuthUser {
  id: string;
  name: string;
  email: string;
  phone: string;
  profileId: string;
}

/**
 * The caller as services see it, and nothing more of the user's record: `meta` rides every
 * packet of a call and of its answer (docs/performance.md, "Between services").
 */
export function authUserOf({ id, name, email, phone, profileId }: AuthUser): AuthUser {
  return { id, name, email, phone, profileId };
}

/** What the gateway puts in `ctx.meta` for every authenticated call. */
/**
 * Who acts through `/admin` or the operator CLI, as logs and records name them: an operator
 * token's holder (`tokenId` its id), or whoever holds the platform's own credentials
 * (`tokenId` null): ADMIN_TOKEN (`admin-token`) or the CLI's Secret (`cli`, or
 * `cli:<WAYBILL_OPERATOR>`). Decision 157.
 */
export interface ActingOperator {
  name: string;
  tokenId: string | null;
}

/**
 * Who makes a credential (a courier token, an API key), as its record keeps them: revoking a
 * leaked operator token leaves what it made working, so what it made must be findable.
 */
export function makerOf(operator: ActingOperator | undefined): {
  createdBy?: string;
  createdByTokenId?: string;
} {
  return operator
    ? { createdBy: operator.name, createdByTokenId: operator.tokenId ?? undefined }
    : {};
}

/** The name of whoever acts with ADMIN_TOKEN itself. */
export const ADMIN_TOKEN_OPERATOR = 'admin-token';

/**
 * Who a call runs for, as a log line names them (the access log, the operators' moves): nobody
 * when no operator called it, and a token's id only for an operator token.
 */
export const operatorOf = (meta: Pick<RequestMeta, 'operator'> | undefined) => {
  const operator = meta?.operator;
  return operator
    ? { operator: operator.name, operatorTokenId: operator.tokenId ?? undefined }
    : {};
};

export interface RequestMeta {
  user?: AuthUser;
  apiKeyId?: string;
  /** The route's `optionHeaders` the request sent, by lower-case name. */
  optionHeaders?: Record<string, string>;
  /**
   * True when the request's API key is publishable (`serverOnly: false`): its file allowances
   * are its account's publishable share (`AllowanceShare`).
   */
  publishableKey?: boolean;
  /** `/courier` routes: the courier the token acts as, and the token's id. */
  courier?: { id: string; tokenId: string };
  /** `/admin` routes and the operator CLI: who acts (`ActingOperator`). */
  operator?: ActingOperator;
  /**
   * Set while the first run of a request with an `Idempotency-Key` is under way: the same for
   * its retries, different for any other request (gateway/idempotency).
   */
  idempotencyToken?: string;
  $statusCode?: number;
  $location?: string;
  $responseHeaders?: Record<string, string>;
  /** `body: 'stream'` routes: the request's `Content-Type` and `Content-Length` headers. */
  contentType?: string;
  contentLength?: number;
  /** Set by a service answering a remote caller with bytes: pull them with it (libs/transfer). */
  $transferTicket?: TransferTicket;
}

export type WaybillContext<P = Record<string, unknown>> = Context<P, RequestMeta>;

export interface ActionDefinition<P = Record<string, unknown>> extends Omit<
  ActionSchema,
  'params' | 'handler'
> {
  /** One object, or (a body of two shapes) a conditional choice between two objects. */
  params?: Joi.ObjectSchema<P> | Joi.AlternativesSchema<P>;
  http?: HttpRoute;
  /**
   * Whether a call lost with its node may be repeated on another (`libs/contracts/retry`):
   * every action says so; a contract action takes its contract's.
   */
  retry: Retry;
  /** The contract this action implements (`libs/contracts`): `service.action`. */
  contract?: ActionName;
  handler: (ctx: WaybillContext<P>) => unknown;
}

/** The id of the user the gateway authenticated the call as; 401 when there is none. */
export function requireUser(ctx: WaybillContext<unknown>): string {
  const id = ctx.meta.user?.id;
  if (!id) throw unauthorized('API key is required');
  return id;
}

/** The message of a `/courier` call that carries no courier token. */
export const COURIER_TOKEN_REQUIRED = 'Courier token is required';

/** The id of the courier the gateway authenticated the call as; 401 when there is none. */
export function requireCourier(ctx: WaybillContext<unknown>): string {
  const id = ctx.meta.courier?.id;
  if (!id) throw unauthorized(COURIER_TOKEN_REQUIRED);
  return id;
}

/** Declares one action with its params type inferred from its joi schema. */
export function action<P>(definition: ActionDefinition<P>): ActionDefinition<P> {
  return definition;
}

/**
 * Declares the action that implements a contract of `libs/contracts`: its params schema and
 * its handler's answer must be the contract's, checked at compile time, and the service must
 * register it under the contract's name, checked when the service schema is built. Its retry
 * kind is the contract's.
 */
export function implement<N extends ActionName, V extends ParamsOf<N> = ParamsOf<N>>(
  contract: N,
  definition: Omit<ActionDefinition<ParamsOf<N>>, 'contract' | 'params' | 'handler' | 'retry'> & {
    params: Joi.ObjectSchema<ParamsOf<N>>;
    /** Sees the params as validated: `WithDefaults` names the keys the schema fills in. */
    handler: (ctx: WaybillContext<V>) => AnswerOf<N> | Promise<AnswerOf<N>>;
  },
): ActionDefinition<ParamsOf<N>> {
  // The validator turned the caller's params into V before the handler runs.
  return { ...definition, contract, retry: CONTRACT_RETRY[contract] } as ActionDefinition<
    ParamsOf<N>
  >;
}

/** Params after validation: the keys whose schema has a default are always there. */
export type WithDefaults<P, K extends keyof P> = P & Required<Pick<P, K>>;

export interface ServiceDefinition extends Omit<ServiceSchema, 'actions' | 'settings'> {
  name: string;
  settings?: Record<string, unknown>;
  // Each action has its own params type; the map only needs the common shape.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  actions?: Record<string, ActionDefinition<any>>;
}

/** A service's actions, for modules that contribute some of them. */
export type ServiceActions = NonNullable<ServiceDefinition['actions']>;

/**
 * The moleculer schema of a service definition (joi params are handled by JoiValidator).
 * Throws when an action implementing a contract is registered under another name.
 */
export function toServiceSchema(definition: ServiceDefinition): ServiceSchema {
  for (const [name, action] of Object.entries(definition.actions ?? {})) {
    const registered = `${definition.name}.${name}`;
    if (action.contract && action.contract !== registered) {
      throw new Error(`${registered} implements the contract of ${action.contract}`);
    }
  }
  return definition as unknown as ServiceSchema;
}
