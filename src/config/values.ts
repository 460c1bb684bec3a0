import { isLoopbackHost } from '../core/hosts.js';
import { withoutUserinfo } from '../core/redact.js';
import type { Kind } from './config.js';

/**
 * Parses one value by the syntax of its kind. Returns undefined and records a problem naming
 * `name` when the value does not fit; a secret or a proxy URL is never shown in the problem.
 */
export function parseValue(kind: Kind, value: unknown, name: string, problems: string[]): unknown {
  const shown = kind.type === 'string' && kind.secret ? '' : ` (got ${JSON.stringify(value)})`;
  const fail = (what: string): undefined => {
    problems.push(`${name} must be ${what}${shown}`);
    return undefined;
  };
  switch (kind.type) {
    case 'string':
    case 'path':
    case 'url':
    case 'host': {
      if (typeof value !== 'string' && typeof value !== 'number') return fail('a string');
      const s = String(value).trim();
      if (s === '') return fail('a non-empty string');
      if (kind.type === 'host' && !/^(\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/.test(s)) {
        return fail('a host name or IP address');
      }
      return kind.type === 'host' ? s.replace(/^\[|\]$/g, '') : s;
    }
    case 'bool': {
      if (typeof value === 'boolean') return value;
      // Only strings and numbers are read as text: an object from the file may not convert.
      const s = typeof value === 'string' || typeof value === 'number' ? String(value).trim().toLowerCase() : '';
      if (s === 'true' || s === '1' || s === 'yes') return true;
      if (s === 'false' || s === '0' || s === 'no') return false;
      return fail('true or false');
    }
    case 'port':
    case 'int': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
      const min = kind.type === 'port' ? 0 : kind.min;
      const max = kind.type === 'port' ? 65535 : (kind.max ?? Number.MAX_SAFE_INTEGER);
      if (!Number.isSafeInteger(n) || n < min || n > max) {
        if (kind.type === 'port') return fail('a port number from 0 to 65535');
        return fail(kind.max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`);
      }
      return n;
    }
    case 'number': {
      // Only numbers and numeric strings: Number(true) is 1 and Number([5]) is 5.
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      const max = kind.max ?? Infinity;
      const ok = Number.isFinite(n) && (kind.exclusive ? n > kind.min && n < max : n >= kind.min && n <= max);
      if (!ok) {
        if (kind.exclusive) return fail(`a number between ${kind.min} and ${max}, exclusive`);
        return fail(kind.max === undefined ? `a number of at least ${kind.min}` : `a number from ${kind.min} to ${kind.max}`);
      }
      return n;
    }
    case 'params': {
      const { params, problems: bad } = parseParams(value, name);
      problems.push(...bad);
      return bad.length > 0 ? undefined : Object.freeze(params.map((p) => Object.freeze(p)));
    }
    case 'proxy': {
      const url = typeof value === 'string' || typeof value === 'number' ? proxyUrl(String(value).trim()) : undefined;
      if (url !== undefined) return url;
      problems.push(
        `${name} must be a proxy URL such as http://proxy.example.com:3128 (got ${JSON.stringify(withoutUserinfo(String(value)))})`,
      );
      return undefined;
    }
    case 'mode': {
      // A YAML 1.2 number has lost its leading zero: 0660 is read as six hundred and sixty.
      if (typeof value === 'number') return fail('an octal file mode in quotes, such as "0660" (YAML reads 0660 as a decimal number)');
      const digits = typeof value === 'string' ? /^\s*(?:0o?)?([0-7]{1,3})\s*$/i.exec(value)?.[1] : undefined;
      if (digits === undefined) return fail('an octal file mode from 0000 to 0777, such as 0660');
      return digits.padStart(4, '0');
    }
    case 'enum': {
      const s = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
      if (!kind.values.includes(s)) return fail(`one of ${kind.values.join(', ')}`);
      return s;
    }
  }
}

/**
 * The syntax of a list of form fields: a form-encoded string (`a=1&b=2`, as the environment
 * holds it), or a map of names to a string or a list of strings (as a YAML file holds it).
 * Repeated names are kept in order. Returns the problems instead of throwing.
 */
export function parseParams(value: unknown, name: string): { params: [string, string][]; problems: string[] } {
  const params: [string, string][] = [];
  const problems: string[] = [];
  if (typeof value === 'string') {
    for (const [k, v] of new URLSearchParams(value)) params.push([k, v]);
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) {
      const list = Array.isArray(v) ? v : [v];
      for (const item of list) {
        if (typeof item !== 'string' && typeof item !== 'number') {
          problems.push(`${name}.${k} must be a string or a list of strings`);
        } else params.push([k, String(item)]);
      }
    }
  } else {
    problems.push(`${name} must be a form-encoded string (a=1&b=2) or a map of names to a string or a list of strings`);
  }
  if (params.some(([k]) => k === '')) problems.push(`${name} has a field with an empty name`);
  return { params: problems.length > 0 ? [] : params, problems: [...new Set(problems)] };
}

/**
 * A proxy URL as curl reads one: no scheme means `http://`; `http:` or `https:` only; nothing
 * after the authority. Returns the normalised URL, or undefined when it is not usable.
 */
export function proxyUrl(value: string): string | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.hostname === '') return undefined;
  return url.href.replace(/\/$/, '');
}

/** What an endpoint URL may be, said where one is refused. */
const URL_FORMS = 'https://host[:port][/path], or http:// for a loopback host (for another host with ALLOW_INSECURE_HTTP=true)';

export interface UrlRules {
  /** Remove the path's trailing slashes (BASE_URL; a token endpoint's may matter to its server). Default true. */
  trimSlash?: boolean;
  /** What the setting is when unset, said when its value is no URL at all. */
  whenUnset?: string;
}

/**
 * Checks an endpoint URL: absolute, http or https, no credentials, no query or fragment, and http
 * only for a loopback host unless `allowInsecure`. Returns it normalised (origin and path, the
 * path's trailing slashes removed unless `rules.trimSlash` is false), or undefined after recording
 * the problem.
 */
export function checkUrl(
  value: string,
  name: string,
  allowInsecure: boolean,
  problems: string[],
  rules: UrlRules = {},
): string | undefined {
  const notAbsolute = (): void => {
    const unset = rules.whenUnset === undefined ? '' : `; unset, it is ${rules.whenUnset}`;
    problems.push(`${name} must be an absolute http(s) URL (got ${JSON.stringify(withoutUserinfo(value))}): ${URL_FORMS}${unset}`);
  };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    notAbsolute();
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    notAbsolute();
    return undefined;
  }
  if (url.username || url.password) {
    problems.push(`${name} must not carry credentials in the URL; use CLIENT_ID and CLIENT_SECRET_FILE`);
    return undefined;
  }
  if (url.search || url.hash) {
    problems.push(`${name} must not have a query or fragment (got ${JSON.stringify(withoutUserinfo(value))})`);
    return undefined;
  }
  if (url.protocol === 'http:' && !allowInsecure && !isLoopbackHost(url.hostname)) {
    problems.push(
      `${name} uses http: for a non-loopback host (${url.hostname}); use https, or set ALLOW_INSECURE_HTTP=true to accept ` +
        `sending credentials in clear text`,
    );
    return undefined;
  }
  return `${url.origin}${rules.trimSlash === false ? url.pathname : url.pathname.replace(/\/+$/, '')}`;
}
