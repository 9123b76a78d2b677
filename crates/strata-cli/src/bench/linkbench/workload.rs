//! What LinkBench asks for, as numbers: the operation mix, the id distributions, the number of
//! out-links each node gets, how many id2s a multiget asks for, and payload sizes, all from
//! LinkBench's `config/FBWorkload.properties` and `config/Distribution.dat`.
//!
//! Owns: the random choices of the load and request phases (deterministic for a seed).
//! Must not: touch a store, time anything or print.

use super::super::keygen::Mt19937_64;

/// LinkBench's first node id (`startid1`).
pub const START_ID: u64 = 1;
/// LinkBench's `LinkStore.DEFAULT_LINK_TYPE`; the `link_type_count` types follow it.
pub const FIRST_LINK_TYPE: u64 = 123_456_789;
/// `link_type_count` in FBWorkload.properties.
pub const LINK_TYPE_COUNT: u64 = 2;
/// `LinkStore.DEFAULT_LIMIT`: the most links one get_link_list returns.
pub const LINK_LIST_LIMIT: usize = 10_000;

/// LinkBench's ten request operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    AddNode,
    UpdateNode,
    DeleteNode,
    GetNode,
    AddLink,
    DeleteLink,
    UpdateLink,
    CountLink,
    MultigetLink,
    GetLinksList,
}

/// Every operation with the name LinkBench prints and its share in percent (FBWorkload's
/// `addnode`, `updatenode`, ... `getlinklist`; they sum to 100).
pub const OPS: [(Op, &str, f64); 10] = [
    (Op::AddNode, "ADD_NODE", 2.5732789),
    (Op::UpdateNode, "UPDATE_NODE", 7.366437),
    (Op::DeleteNode, "DELETE_NODE", 1.0115914),
    (Op::GetNode, "GET_NODE", 12.9326683),
    (Op::AddLink, "ADD_LINK", 8.9886601),
    (Op::DeleteLink, "DELETE_LINK", 2.9907664),
    (Op::UpdateLink, "UPDATE_LINK", 8.0122125),
    (Op::CountLink, "COUNT_LINK", 4.8863567),
    (Op::MultigetLink, "MULTIGET_LINK", 0.5261142),
    (Op::GetLinksList, "GET_LINKS_LIST", 50.7119145),
];

impl Op {
    /// The operation's index in [`OPS`].
    pub fn index(self) -> usize {
        OPS.iter().position(|(o, _, _)| *o == self).unwrap_or(0)
    }
}

/// ID2Chooser's shares of existing links an operation aims at: its id2 range is nlinks / p.
pub const P_ADD_EXIST: f64 = 0.05;
pub const P_UPDATE_EXIST: f64 = 0.9;
pub const P_DELETE_EXIST: f64 = 0.9;
pub const P_GET_EXIST: f64 = 0.5;

/// A seeded random source with the draws LinkBench makes.
pub struct Rng(Mt19937_64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(Mt19937_64::new(seed))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.next_u64() % n
        }
    }

    /// The next operation, drawn by the shares of [`OPS`].
    pub fn op(&mut self) -> Op {
        let mut x = self.unit() * 100.0;
        for (op, _, share) in OPS {
            if x < share {
                return op;
            }
            x -= share;
        }
        Op::GetLinksList
    }

    /// One of the link types, uniformly (ID2Chooser.chooseRandomLinkType).
    pub fn link_type(&mut self) -> u64 {
        FIRST_LINK_TYPE + self.below(LINK_TYPE_COUNT)
    }

    /// How many id2s a multiget asks for: `link_multiget_dist`, geometric with p = 0.382
    /// between 1 and 128.
    pub fn multiget_count(&mut self) -> usize {
        let u = 1.0 - self.unit(); // (0, 1]
        let k = 1.0 + (u.ln() / (1.0f64 - 0.382).ln()).floor();
        k.clamp(1.0, 128.0) as usize
    }

    /// A payload size with mean `mean`: uniform in [0, 2 * mean].
    pub fn data_size(&mut self, mean: usize) -> usize {
        self.below(2 * mean as u64 + 1) as usize
    }
}

/// FBWorkload's `node_datasize` and `link_datasize`: mean payload bytes.
pub const NODE_DATA_MEAN: usize = 128;
pub const LINK_DATA_MEAN: usize = 8;

/// A Zipf-shaped choice among the `n` ids [START_ID, START_ID + n), YCSB's generator (Gray et
/// al., "Quickly generating billion-record synthetic databases") for shapes below 1, with rank
/// r mapped to an id by an affine permutation so the hot ids are spread over the id space and
/// each distribution (seeded apart) has its own hot set.
pub struct Zipf {
    n: u64,
    theta: f64,
    zeta_n: f64,
    alpha: f64,
    eta: f64,
    mult: u64,
    add: u64,
}

impl Zipf {
    /// `theta` in (0, 1): FBWorkload's `read_shape` 0.8, `write_shape` 0.741,
    /// `node_read_shape` 0.625, `node_update_shape` 0.606.
    pub fn new(n: u64, theta: f64, salt: u64) -> Self {
        let n = n.max(1);
        let zeta_n = zeta(n, theta);
        let zeta_2 = zeta(2.min(n), theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n);
        let mut mult = ((0x9E37_79B9_7F4A_7C15 ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03)) % n) | 1;
        while gcd(mult, n) != 1 {
            mult += 1;
        }
        let add = splitmix(salt) % n;
        Self { n, theta, zeta_n, alpha: 1.0 / (1.0 - theta), eta, mult, add }
    }

    /// The rank (0 = hottest) of one draw.
    fn rank(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    /// One id.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let r = self.rank(rng) as u128;
        START_ID + ((r * self.mult as u128 + self.add as u128) % self.n as u128) as u64
    }
}

/// sum over i in 1..=n of 1 / i^theta; past a million terms the rest is the Euler-Maclaurin
/// estimate (integral plus end correction), exact to far below what a sampler can show.
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let m = n.min(EXACT);
    let mut sum: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
    if n > m {
        let (a, b) = (m as f64, n as f64);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (b.powf(-theta) - a.powf(-theta)) / 2.0;
    }
    sum
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A fixed scramble of a 64-bit value (splitmix64's finaliser).
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `config/Distribution.dat`'s `nlinks` CDF (out-links per node, percent of nodes with at most
/// that many), 54 of its 19,951 points: every count to 20, then about every 1.4x. The mean of
/// this table is 4.15 links per node (the full table's: 4.10).
const NLINKS_CDF: [(u64, f64); 54] = [
    (0, 45.33160573),
    (1, 77.46259112),
    (2, 86.95805953),
    (3, 91.99305428),
    (4, 94.45079910),
    (5, 95.82807169),
    (6, 96.72252805),
    (7, 97.32008855),
    (8, 97.76142319),
    (9, 98.07767693),
    (10, 98.32803368),
    (11, 98.53703922),
    (12, 98.70025671),
    (13, 98.82537746),
    (14, 98.93357097),
    (15, 99.02687903),
    (16, 99.10803256),
    (17, 99.17988071),
    (18, 99.23667679),
    (19, 99.28327320),
    (20, 99.32695560),
    (28, 99.52580526),
    (39, 99.65339353),
    (54, 99.73873632),
    (76, 99.79823271),
    (107, 99.83804393),
    (150, 99.86621857),
    (210, 99.88799885),
    (295, 99.90526885),
    (413, 99.92004203),
    (578, 99.93273721),
    (809, 99.94402906),
    (1133, 99.95433542),
    (1587, 99.96355519),
    (2222, 99.97190801),
    (3111, 99.97927797),
    (4355, 99.98530683),
    (6098, 99.99008975),
    (8536, 99.99373275),
    (11952, 99.99629872),
    (16732, 99.99796514),
    (23426, 99.99894767),
    (32781, 99.99948997),
    (45911, 99.99977412),
    (64236, 99.99989793),
    (89632, 99.99995423),
    (124055, 99.99997629),
    (174774, 99.99998584),
    (243667, 99.99999506),
    (315801, 99.99999802),
    (450999, 99.99999901),
    (485372, 99.99999934),
    (906857, 99.99999967),
    (961963, 100.0),
];

/// How many out-links node `id1` has in all, a pure function of (id1, seed) so the request
/// phase knows it without reading: a hash of the id, read through the CDF, uniform inside a
/// segment of the table.
pub fn total_links(id1: u64, seed: u64) -> u64 {
    let h = splitmix(id1 ^ splitmix(seed));
    let pct = (h >> 11) as f64 / (1u64 << 53) as f64 * 100.0;
    let i = NLINKS_CDF.partition_point(|&(_, c)| c < pct).min(NLINKS_CDF.len() - 1);
    if i == 0 {
        return NLINKS_CDF[0].0;
    }
    let ((lo_v, lo_c), (hi_v, hi_c)) = (NLINKS_CDF[i - 1], NLINKS_CDF[i]);
    let within = ((pct - lo_c) / (hi_c - lo_c)).clamp(0.0, 1.0);
    lo_v + 1 + ((hi_v - lo_v - 1) as f64 * within) as u64
}

/// ID2Chooser.calcLinkCount: node `id1`'s links of `link_type`, the total split over the types.
pub fn links_of_type(id1: u64, link_type: u64, seed: u64) -> u64 {
    let total = total_links(id1, seed);
    let min = total / LINK_TYPE_COUNT;
    let left_over = total - min * LINK_TYPE_COUNT;
    if link_type - FIRST_LINK_TYPE < left_over {
        min + 1
    } else {
        min
    }
}

/// ID2Chooser.chooseForOp: an id2 among id1 + [0, ceil(nlinks / p_exist)), so about
/// `p_exist` of the choices hit a link the load made.
pub fn choose_id2(rng: &mut Rng, id1: u64, link_type: u64, p_exist: f64, seed: u64) -> u64 {
    let nlinks = links_of_type(id1, link_type, seed);
    let range = ((nlinks as f64 / p_exist).ceil() as u64).max(1);
    id1 + rng.below(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_sums_to_100_and_get_links_list_is_half() {
        let sum: f64 = OPS.iter().map(|o| o.2).sum();
        assert!((sum - 100.0).abs() < 1e-6, "{sum}");
        let mut rng = Rng::new(7);
        let lists = (0..100_000).filter(|_| rng.op() == Op::GetLinksList).count();
        assert!((49_000..52_500).contains(&lists), "{lists}");
    }

    #[test]
    fn nlinks_mean_is_about_four_and_most_nodes_have_few() {
        let n = 200_000u64;
        let total: u64 = (1..=n).map(|id| total_links(id, 3)).sum();
        let zero = (1..=n).filter(|&id| total_links(id, 3) == 0).count() as f64 / n as f64;
        assert!((0.43..0.48).contains(&zero), "{zero}");
        // The tail is heavy, so the sample mean swings; LinkBench's is 4.1.
        let mean = total as f64 / n as f64;
        assert!((2.5..8.0).contains(&mean), "{mean}");
        let split: u64 = (0..LINK_TYPE_COUNT).map(|t| links_of_type(42, FIRST_LINK_TYPE + t, 3)).sum();
        assert_eq!(split, total_links(42, 3));
    }

    #[test]
    fn zipf_stays_in_range_and_is_skewed() {
        let z = Zipf::new(1000, 0.8, 1);
        let mut rng = Rng::new(1);
        let mut hits = vec![0u32; 1001];
        for _ in 0..100_000 {
            let id = z.next(&mut rng);
            assert!((START_ID..START_ID + 1000).contains(&id));
            hits[id as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        // Zipf 0.8 over 1000: the hottest id gets about 6%, the top 10% about half.
        let top: u32 = hits[..100].iter().sum();
        assert!(hits[0] > 3_000 && (40_000..65_000).contains(&top), "{} {top}", hits[0]);
        assert!(zeta(2_000_000, 0.8) > zeta(1_000_000, 0.8));
    }

    #[test]
    fn multiget_counts_are_geometric() {
        let mut rng = Rng::new(5);
        let draws: Vec<usize> = (0..50_000).map(|_| rng.multiget_count()).collect();
        assert!(draws.iter().all(|&k| (1..=128).contains(&k)));
        let ones = draws.iter().filter(|&&k| k == 1).count() as f64 / draws.len() as f64;
        assert!((0.36..0.40).contains(&ones), "{ones}");
    }
}
