import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';

const userSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    name: { type: String, required: true },
    email: { type: String, required: true, unique: true },
    phone: { type: String, required: true },
    profileId: { type: String, required: true, default: () => randomUUID() },
  },
  { timestamps: true, versionKey: false },
);

const quotaSchema = new Schema(
  {
    limit: { type: Number, required: true },
    windowSeconds: { type: Number, required: true },
  },
  { _id: false },
);

const apiKeySchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    userId: { type: String, required: true, index: true },
    hash: { type: String, required: true, unique: true },
    environment: { type: String, required: true, enum: ['live', 'staging'] },
    serverOnly: { type: Boolean, required: true },
    quota: { type: quotaSchema, default: null },
    lastUsedAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);

export type UserRecord = InferSchemaType<typeof userSchema>;
export type ApiKeyRecord = InferSchemaType<typeof apiKeySchema>;

export function defineAccountModels(connection: Connection) {
  return {
    User: connection.model('User', userSchema, 'users'),
    ApiKey: connection.model('ApiKey', apiKeySchema, 'api_keys'),
  };
}

export type AccountModels = ReturnType<typeof defineAccountModels>;
