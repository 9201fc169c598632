"""SAC-AdaEnt (the paper's diagnostic and mitigation, Sec. 7; details from the official code).

A subclass of stable-baselines3's :class:`~stable_baselines3.SAC`. Beside SAC's soft critic pair
it trains a *plain* critic pair whose target omits the entropy term, using the same next action:

    y_soft  = r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log pi(a'|s')),
    y_plain = r + gamma (1 - d)  min_i P'_i(s', a'),              a' ~ pi(.|s').

At each actor update it samples ``n_samples`` actions per state from the policy, evaluates both
pairs there (min of each), and runs the landscape test
(:func:`icml25.kernels.adaent.landscape_similarity`: row-min shift, cosine similarity). In states
whose similarity is below ``threshold`` the actor loss ``E[alpha log pi(a|s) - Q_sel(s, a)]`` uses
the plain critic, elsewhere the soft one. The switched fraction is logged
(``train/adaent_switched``) and kept in :attr:`SACAdaEnt.switched`.

With ``threshold = -1`` no state ever switches (a cosine is >= -1), and the extra work draws its
random numbers from its own generator: the soft critics, the actor and the temperature then take
exactly the updates of SB3's SAC with the same seed (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
import torch.nn.functional as F
from stable_baselines3 import SAC
from stable_baselines3.common.utils import polyak_update

from icml25.checks import check_budget
from icml25.kernels import adaent

from ._checks import _check_n_samples, _check_threshold
from .defaults import DEFAULTS

__all__ = ["SACAdaEnt"]


class SACAdaEnt(SAC):
    """SB3's SAC with a plain critic pair and the AdaEnt landscape switch.

    Args:
        policy, env: as :class:`stable_baselines3.SAC` (``"MlpPolicy"``, a gymnasium env).
        n_samples: actions sampled per state for the landscape test, >= 2 (paper: 100; the
            chapter's cpu profile uses 16).
        threshold: cosine threshold in [-1, 1] below which the actor uses the plain critic
            (paper: 0.9; -1 never switches and reproduces SAC).
        **kwargs: every other argument of :class:`stable_baselines3.SAC` (``ent_coef``, ``seed``,
            ``policy_kwargs``, ...).

    Raises:
        ValueError/TypeError: ``n_samples < 2`` or ``threshold`` outside [-1, 1], naming the argument.
        TooLargeError: ``batch_size * n_samples`` sampled critic inputs cannot fit in memory.
    """

    def __init__(
        self,
        policy: Any,
        env: Any,
        n_samples: int = DEFAULTS.agent.n_samples,
        threshold: float = DEFAULTS.agent.threshold,
        **kwargs: Any,
    ) -> None:
        self.n_samples = _check_n_samples(n_samples)
        self.threshold = _check_threshold(threshold)
        self.switched: list[float] = []
        super().__init__(policy, env, **kwargs)
        self._check_landscape_budget()

    def _check_landscape_budget(self) -> None:
        """Refuse up front a landscape test whose (batch_size * n_samples) critic inputs cannot fit."""
        # _init_setup_model=False: checked when the model is set up
        if not hasattr(self, "critic"):
            return
        width = max(
            m.out_features for m in self.critic.modules() if isinstance(m, th.nn.Linear)
        )
        per_row = (
            int(np.prod(self.observation_space.shape))
            + int(np.prod(self.action_space.shape))
            + 4 * width
        )
        check_budget(
            f"SACAdaEnt(n_samples={self.n_samples}, batch_size={self.batch_size})",
            n_bytes=4.0 * self.batch_size * self.n_samples * per_row,
        )

    def _setup_model(self) -> None:
        super()._setup_model()
        # the plain pair is built without touching torch's global generator, so that
        # SAC's own draws (initial weights already made, actions, noise) are
        # the same as in plain SAC
        with th.random.fork_rng(devices=[]):
            th.manual_seed(int(self.seed or 0) + 104_729)
            self.plain_critic = self.policy.make_critic(features_extractor=None)
            self.plain_critic_target = self.policy.make_critic(features_extractor=None)
        self.plain_critic_target.load_state_dict(self.plain_critic.state_dict())
        self.plain_critic_target.set_training_mode(False)
        self.plain_critic.optimizer = self.policy.optimizer_class(
            self.plain_critic.parameters(),
            lr=self.lr_schedule(1),
            **self.policy.optimizer_kwargs,
        )
        self._adaent_gen = th.Generator(device=self.device)
        self._adaent_gen.manual_seed(int(self.seed or 0) + 15_485_863)

    def _sample_landscape(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Soft and plain critic values (min of each pair) at ``n_samples`` policy actions per state.

        Returns two (B, M) tensors. Draws from the model's own generator, not torch's global one."""
        M = self.n_samples
        mean, log_std, _ = self.actor.get_action_dist_params(obs)
        eps = th.randn(
            (mean.shape[0], M, mean.shape[1]),
            generator=self._adaent_gen,
            device=mean.device,
        )
        # squashed Gaussian samples
        acts = th.tanh(mean.unsqueeze(1) + log_std.exp().unsqueeze(1) * eps)
        obs_rep = obs.repeat_interleave(M, dim=0)
        acts = acts.reshape(-1, mean.shape[1])
        q_soft = th.min(
            th.cat(self.critic(obs_rep, acts), dim=1), dim=1
        ).values.reshape(-1, M)
        q_plain = th.min(
            th.cat(self.plain_critic(obs_rep, acts), dim=1), dim=1
        ).values.reshape(-1, M)
        return q_soft, q_plain

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        """SB3's SAC update with the plain pair's update and the AdaEnt actor loss (see the module).

        Args:
            gradient_steps: updates to run; batch_size: replay minibatch size.
        """
        self.policy.set_training_mode(True)
        self.plain_critic.set_training_mode(True)
        optimizers = [
            self.actor.optimizer,
            self.critic.optimizer,
            self.plain_critic.optimizer,
        ]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]
        self._update_learning_rate(optimizers)

        ent_coef_losses, ent_coefs, actor_losses, critic_losses, switched = (
            [],
            [],
            [],
            [],
            [],
        )
        for gradient_step in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            discounts = data.discounts if data.discounts is not None else self.gamma
            if self.use_sde:
                self.actor.reset_noise()
            actions_pi, log_prob = self.actor.action_log_prob(data.observations)
            log_prob = log_prob.reshape(-1, 1)

            ent_coef_loss = None
            if self.ent_coef_optimizer is not None and self.log_ent_coef is not None:
                ent_coef = th.exp(self.log_ent_coef.detach())
                ent_coef_loss = -(
                    self.log_ent_coef * (log_prob + self.target_entropy).detach()
                ).mean()
                ent_coef_losses.append(ent_coef_loss.item())
            else:
                ent_coef = self.ent_coef_tensor
            ent_coefs.append(ent_coef.item())
            if ent_coef_loss is not None and self.ent_coef_optimizer is not None:
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()

            with th.no_grad():
                next_actions, next_log_prob = self.actor.action_log_prob(
                    data.next_observations
                )
                next_q = th.min(
                    th.cat(
                        self.critic_target(data.next_observations, next_actions), dim=1
                    ),
                    dim=1,
                    keepdim=True,
                ).values
                next_plain = th.min(
                    th.cat(
                        self.plain_critic_target(data.next_observations, next_actions),
                        dim=1,
                    ),
                    dim=1,
                    keepdim=True,
                ).values
                # y_soft
                target_soft = data.rewards + (1 - data.dones) * discounts * (
                    next_q - ent_coef * next_log_prob.reshape(-1, 1)
                )
                # y_plain
                target_plain = data.rewards + (1 - data.dones) * discounts * next_plain

            current = self.critic(data.observations, data.actions)
            critic_loss = 0.5 * sum(F.mse_loss(q, target_soft) for q in current)
            critic_losses.append(critic_loss.item())
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            plain_loss = 0.5 * sum(
                F.mse_loss(q, target_plain)
                for q in self.plain_critic(data.observations, data.actions)
            )
            self.plain_critic.optimizer.zero_grad()
            plain_loss.backward()
            self.plain_critic.optimizer.step()

            # the landscape test: which states' actor loss uses the plain critic
            with th.no_grad():
                q_soft_m, q_plain_m = self._sample_landscape(data.observations)
                _, mask = adaent.landscape_similarity(
                    q_soft_m, q_plain_m, self.threshold
                )
            switched.append(float(mask.float().mean().item()))

            min_soft = th.min(
                th.cat(self.critic(data.observations, actions_pi), dim=1),
                dim=1,
                keepdim=True,
            ).values
            if bool(mask.any()):
                min_plain = th.min(
                    th.cat(self.plain_critic(data.observations, actions_pi), dim=1),
                    dim=1,
                    keepdim=True,
                ).values
                q_sel = th.where(mask.reshape(-1, 1), min_plain, min_soft)
            else:
                q_sel = min_soft
            actor_loss = (ent_coef * log_prob - q_sel).mean()
            actor_losses.append(actor_loss.item())
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            if gradient_step % self.target_update_interval == 0:
                polyak_update(
                    self.critic.parameters(), self.critic_target.parameters(), self.tau
                )
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)
                polyak_update(
                    self.plain_critic.parameters(),
                    self.plain_critic_target.parameters(),
                    self.tau,
                )

        self._n_updates += gradient_steps
        self.switched.extend(switched)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        self.logger.record("train/adaent_switched", np.mean(switched))
        if ent_coef_losses:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))

    def _excluded_save_params(self) -> list[str]:
        return [
            *super()._excluded_save_params(),
            "plain_critic",
            "plain_critic_target",
            "_adaent_gen",
        ]
