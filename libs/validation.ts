import Joi, { constantOptions } from './joi';
import type { Context, Middleware, ServiceBroker } from 'moleculer';
import { Validators } from 'moleculer';
import { validationError, type FieldError } from './errors';

/**
 * How every action validates: all problems at once, unknown keys refused, and nothing taken
 * for what it is not: a JSON body's number is a JSON number, not `"5"`, its object not a
 * string of JSON (the document says so, and schemathesis checks it). Strings still trim and
 * change case (libs/joi), and the URL's numbers and booleans convert (`fromUrl`). Constant
 * (frozen), so that joi's merges of them with each schema's preferences are made once, not on
 * every validation (libs/joi, decision 76).
 */
export const VALIDATION_OPTIONS: Joi.ValidationOptions = constantOptions({
  abortEarly: false,
  convert: false,
  allowUnknown: false,
  errors: { wrap: { label: false }, label: 'path' },
});

export function toFieldErrors(error: Joi.ValidationError): FieldError[] {
  return error.details.map((d) => ({
    field: d.path.length > 0 ? d.path.join('.') : String(d.context?.key ?? 'body'),
    message: d.message,
  }));
}

/** Validates with joi, throwing the platform's 400 with `errors: [{field, message}]`. */
export function validate<T>(schema: Joi.Schema<T>, input: unknown): T {
  const { value, error } = schema.validate(input, VALIDATION_OPTIONS);
  if (error) throw validationError(toFieldErrors(error));
  return value as T;
}

/**
 * Joi schemas travel in the service catalog that nodes exchange over the transporter;
 * only their validating node needs them, so they serialize to a small marker.
 */
function keepOffTheWire(schema: Joi.Schema): void {
  if (!Object.prototype.hasOwnProperty.call(schema, 'toJSON')) {
    Object.defineProperty(schema, 'toJSON', { value: () => ({ validator: 'joi' }) });
  }
}

/**
 * Moleculer validator for joi schemas given as an action's `params`. Unlike the base
 * class, it hands the converted value (defaults applied) to the action.
 */
export class JoiValidator extends Validators.Base {
  override compile(schema: unknown) {
    if (!Joi.isSchema(schema)) {
      throw new TypeError('Action params must be a joi schema');
    }
    keepOffTheWire(schema);
    return (params: unknown) => {
      validate(schema, params);
      return true;
    };
  }

  override validate(params: unknown, schema: unknown): boolean {
    if (!Joi.isSchema(schema)) throw new TypeError('Action params must be a joi schema');
    validate(schema, params);
    return true;
  }

  override convertSchemaToMoleculer(): Record<string, unknown> {
    return {};
  }

  override middleware(_broker: ServiceBroker): Middleware {
    return {
      name: 'JoiValidator',
      localAction(handler: (ctx: Context) => unknown, action: { params?: unknown }) {
        const schema = action.params;
        if (!Joi.isSchema(schema)) return handler;
        keepOffTheWire(schema);
        return function validateParams(ctx: Context) {
          try {
            ctx.params = validate(schema, ctx.params ?? {});
          } catch (err) {
            // Callers expect a rejected promise, never a synchronous throw from broker.call.
            return Promise.reject(err);
          }
          return handler(ctx);
        };
      },
    } as Middleware;
  }
}
