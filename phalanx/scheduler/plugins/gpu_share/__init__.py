"""GPU-sharing plugins after the FGD paper's simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator).

`GpuShare` filters nodes on GPU model and per-device free milli and, at Reserve, picks the devices a pod
gets; six Score plugins rank nodes for GPU pods: `RandomScore`, `DotProductScore`, `GpuClusteringScore`,
`GpuPackingScore`, `BestFitScore` and `FGDScore` (fragmentation gradient descent), plus Phalanx's
`StrandingScore` (FGD with a term for GPUs stranded without CPU or memory); KAI's `GpuSharingOrder` (shares fill
GPUs other pods already share) is in sharing_order.py, registered on its own. Formulas, integer truncations and
normalisations follow `shared/FGD-PROTOCOL.md` §4. Device state lives in `phalanx.cluster.gpus.GpuTable`,
attached to the ClusterState by these plugins.
"""

from phalanx.scheduler.plugins.gpu_share.best_fit import BestFitScore
from phalanx.scheduler.plugins.gpu_share.clustering import GpuClusteringScore
from phalanx.scheduler.plugins.gpu_share.dot_product import DotProductScore
from phalanx.scheduler.plugins.gpu_share.fgd import FGDScore
from phalanx.scheduler.plugins.gpu_share.packing import GpuPackingScore
from phalanx.scheduler.plugins.gpu_share.random_score import RandomScore
from phalanx.scheduler.plugins.gpu_share.share import GpuShare
from phalanx.scheduler.plugins.gpu_share.stranding import StrandingScore

__all__ = ["BestFitScore", "DotProductScore", "FGDScore", "GpuClusteringScore", "GpuPackingScore", "GpuShare",
           "RandomScore", "StrandingScore"]
