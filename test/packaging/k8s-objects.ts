/**
 * Rendered Kubernetes objects, read as plain data and validated against the API schemas that
 * `kubernetes-models` carries (types and required fields; unknown fields are not flagged, so the
 * tests also assert the fields that matter).
 */
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { expect } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SETTINGS } from '../../src/config/config.js';

// A loose view of the rendered objects: the tests read them as a user reads the YAML.
/* eslint-disable @typescript-eslint/no-explicit-any */
export type Obj = Record<string, any>;

/** Environment variables the proxy reads: a container setting anything else has a typo. */
export const KNOWN_ENV = new Set([...SETTINGS.map((s) => s.env), 'NODE_OPTIONS']);

const MODELS: Record<string, { new (data: any): { validate(): void } }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/Secret': Secret,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

export function parseObjects(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object');
}

/** Validates against the API schema; a ServiceMonitor and a PrometheusRule (CRDs) are checked by hand. */
export function validateObject(o: Obj): void {
  if (o.apiVersion === 'monitoring.coreos.com/v1' && o.kind === 'PrometheusRule') {
    expect(o.metadata.name).toBeTypeOf('string');
    expect(o.spec.groups.length).toBeGreaterThan(0);
    for (const group of o.spec.groups) for (const rule of group.rules) expect(rule.alert ?? rule.record).toBeTypeOf('string');
    return;
  }
  if (o.apiVersion === 'monitoring.coreos.com/v1' && o.kind === 'ServiceMonitor') {
    expect(o.spec.selector.matchLabels).toBeTypeOf('object');
    expect(o.spec.endpoints[0]).toMatchObject({ port: 'admin', path: '/metrics' });
    return;
  }
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  expect(Model, `no schema for ${o.apiVersion} ${o.kind}`).toBeDefined();
  new Model!(o).validate();
}

export const findKind = (objects: Obj[], kind: string): Obj | undefined => objects.find((o) => o.kind === kind);

/** A container's environment by name. */
export const envOf = (container: Obj): Obj => Object.fromEntries((container.env ?? []).map((e: Obj) => [e.name, e]));
