import { cellToBoundary, cellToLatLng, gridRing, latLngToCell } from 'h3-js';
import { haversineKm, type GeoPoint } from '../../libs/geodesy';

/**
 * The H3 cell math of the courier index, pure: which cells a position is in, and the rings a
 * search reads in order, each with a lower bound on the distance of whatever it has not read
 * yet. Couriers are indexed by the cell their position falls in, at two resolutions.
 */

/** About 0.1 km² (edge 0.17 km): where a search starts. */
export const FINE_RES = 9;
/** About 5 km² (edge 1.2 km): the wider rings, so that 20 km is 15 rings rather than 100. */
export const COARSE_RES = 7;
/**
 * Fine rings read before the search goes on at the coarse resolution: disk 4 at res 9 is 61
 * cells and reaches about 1 km, where a dense city has found its courier long before.
 */
export const FINE_RINGS = 4;
/** Cells are drawn from their vertices; a point on an edge may be a hair outside. */
const EDGE_SLACK_KM = 0.001;

export interface CourierCells {
  /** The res-7 cell, as H3's hex string. */
  c7: string;
  /** The res-9 cell. */
  c9: string;
}

export function cellsOf(point: GeoPoint): CourierCells {
  return {
    c7: latLngToCell(point.lat, point.lon, COARSE_RES),
    c9: latLngToCell(point.lat, point.lon, FINE_RES),
  };
}

const pointOf = ([lat, lon]: number[]): GeoPoint => ({ lat, lon });

/**
 * A lower bound of the distance from `point` to any point of `cell`: the distance to its
 * centre less the farthest vertex from the centre. H3 cells are polygons whose edges are
 * great-circle arcs (straight lines of the gnomonic projection), so no point of a cell is
 * farther from its centre than its farthest vertex, and the triangle inequality does the rest.
 */
export function cellLowerBoundKm(point: GeoPoint, cell: string): number {
  const centre = pointOf(cellToLatLng(cell));
  let radius = 0;
  for (const vertex of cellToBoundary(cell)) {
    radius = Math.max(radius, haversineKm(centre, pointOf(vertex)));
  }
  return Math.max(0, haversineKm(point, centre) - radius - EDGE_SLACK_KM);
}

/** The nearest any of `cells` can come to `point`; Infinity for none. */
export function ringLowerBoundKm(point: GeoPoint, cells: readonly string[]): number {
  let bound = Infinity;
  for (const cell of cells) bound = Math.min(bound, cellLowerBoundKm(point, cell));
  return bound;
}

/** One read of a search: the cells of one ring, then how near anything unread can be. */
export interface RingStep {
  res: number;
  /** The ring's distance from the point's own cell, in cells (0: that cell). */
  k: number;
  cells: string[];
  /**
   * No point outside the cells read so far, this step's included, is nearer to the search's
   * point than this (km).
   */
  unreadBeyondKm: number;
}

/**
 * The rings of a search around `point`, nearest first: `fineRings + 1` rings at res 9, then
 * res-7 rings without end (the caller stops). A path from the point to anything outside the
 * disk of radius k crosses a cell of ring k + 1 (neighbouring cells are one ring apart), so
 * the nearest point of ring k + 1 bounds everything unread. Once at res 7, the res-9 disk is
 * read too: what is unread lies outside both, hence the larger of the two bounds.
 *
 * `known` keeps each step's bound, in order, for the next search around the same point with the
 * same `fineRings` (the steps are numbered across both resolutions): it is taken from there when
 * there and written there when not. The bounds are nine tenths of the cell math (a centre and
 * six vertices a cell, each an H3 call: 0.6 ms a step to 3 km, 1.8 to 15 km), and a search
 * waiting for a courier asks about its point again at each of its steps.
 */
export function* ringSteps(
  point: GeoPoint,
  fineRings = FINE_RINGS,
  known: number[] = [],
): Generator<RingStep> {
  let readBound = 0;
  let step = 0;
  for (const res of [FINE_RES, COARSE_RES]) {
    const origin = latLngToCell(point.lat, point.lon, res);
    let ring = [origin];
    for (let k = 0; res === COARSE_RES || k <= fineRings; k++, step++) {
      const next = gridRing(origin, k + 1);
      known[step] ??= Math.max(readBound, ringLowerBoundKm(point, next));
      const unreadBeyondKm = known[step];
      yield { res, k, cells: ring, unreadBeyondKm };
      if (res === FINE_RES && k === fineRings) readBound = unreadBeyondKm;
      ring = next;
    }
  }
}

/**
 * The steps a search reads out to `maxDistanceKm` when it finds nobody nearer: up to the first
 * beyond which nothing unread can be within it.
 */
export function stepsWithin(steps: Iterable<RingStep>, maxDistanceKm: number): RingStep[] {
  const within: RingStep[] = [];
  for (const step of steps) {
    within.push(step);
    if (step.unreadBeyondKm > maxDistanceKm) break;
  }
  return within;
}
