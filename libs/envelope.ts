import type { FieldError } from './errors';

export interface SuccessEnvelope<T> {
  success: true;
  message: string;
  data: T;
}

export interface ErrorEnvelope {
  statusCode: number;
  method: string;
  timestamp: string;
  path: string;
  url: string;
  message: string;
  environment: string;
  errors?: FieldError[];
}

export function successEnvelope<T>(message: string, data: T): SuccessEnvelope<T> {
  return { success: true, message, data };
}

export interface ErrorEnvelopeInput {
  statusCode: number;
  method: string;
  path: string;
  url: string;
  message: string;
  environment: string;
  errors?: FieldError[];
  now?: Date;
}

export function errorEnvelope(input: ErrorEnvelopeInput): ErrorEnvelope {
  const envelope: ErrorEnvelope = {
    statusCode: input.statusCode,
    method: input.method,
    timestamp: (input.now ?? new Date()).toISOString(),
    path: input.path,
    url: input.url,
    message: input.message,
    environment: input.environment,
  };
  if (input.errors && input.errors.length > 0) envelope.errors = input.errors;
  return envelope;
}
