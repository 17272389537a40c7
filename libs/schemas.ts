import Joi from 'joi';

/** Field schemas shared by several services, so one rule reads the same everywhere. */
export const uuid = () =>
  Joi.string()
    .guid({ version: ['uuidv4', 'uuidv7'] })
    .lowercase();

export const e164Phone = () =>
  Joi.string()
    .trim()
    .pattern(/^\+[1-9]\d{6,14}$/)
    .messages({
      'string.pattern.base': '{{#label}} must be an E.164 phone number like +2348012345678',
    });

export const email = () => Joi.string().trim().lowercase().email({ tlds: false }).max(254);

export const personName = () => Joi.string().trim().min(1).max(120);
